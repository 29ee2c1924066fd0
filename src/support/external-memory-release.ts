import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** Runs one major garbage collection; resolves once it is done. */
export type Collect = () => PromiseLike<void>;

/**
 * Asks V8 for a major garbage collection once memory outside its heap has grown and then stopped
 * growing. That memory (Buffers, and the external strings Node makes of long latin1 text, such as
 * the data URLs lifted out of a large JSON body) is freed only by a major collection, and V8 starts
 * one only while it allocates: a node that falls quiet after a burst of large bodies allocates
 * almost nothing, so the dead bodies of the burst stayed resident for as long as it stayed quiet.
 */
export class ExternalMemoryRelease {
  private afterLastCollection: number;
  private previous: number;
  private collecting = false;

  /**
   * @param readExternal V8's count of external memory, in bytes.
   * @param slackBytes Growth since the last collection that is worth one.
   */
  constructor(
    private readonly readExternal: () => number,
    private readonly collect: Collect,
    private readonly slackBytes: number,
  ) {
    this.afterLastCollection = readExternal();
    this.previous = this.afterLastCollection;
  }

  /** One look, at a regular interval; resolves with whether it collected. */
  async check(): Promise<boolean> {
    if (this.collecting) return false;
    const external = this.readExternal();
    const growing = external > this.previous;
    this.previous = external;
    // V8's own collections, while the work went on, count as the last one too.
    this.afterLastCollection = Math.min(this.afterLastCollection, external);
    // While it grows the work that holds it is still going on, and V8 collects as it allocates.
    if (growing || external - this.afterLastCollection < this.slackBytes) return false;
    this.collecting = true;
    try {
      await this.collect();
    } finally {
      this.collecting = false;
    }
    this.afterLastCollection = this.readExternal();
    this.previous = this.afterLastCollection;
    return true;
  }
}

/**
 * V8's `gc` function, which `--expose-gc` would make global, taken from a context of its own so
 * that neither the command line nor the global scope changes. `async` runs the collection in
 * incremental steps between tasks rather than in one pause.
 */
export function majorCollection(): Collect {
  setFlagsFromString('--expose-gc');
  try {
    const gc = runInNewContext('gc') as (options: {
      type: 'major';
      execution: 'async';
    }) => PromiseLike<void>;
    return () => gc({ type: 'major', execution: 'async' });
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
}

/** How often the server looks, and how much growth is worth a collection. */
const CHECK_INTERVAL_MS = 5000;
const SLACK_BYTES = 64 * 1024 * 1024;

/** Starts the server's regular look; it never keeps the process alive. */
export function releaseExternalMemoryAfterBursts(): void {
  const release = new ExternalMemoryRelease(
    () => process.memoryUsage().external,
    majorCollection(),
    SLACK_BYTES,
  );
  setInterval(() => void release.check(), CHECK_INTERVAL_MS).unref();
}
