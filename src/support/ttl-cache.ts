import { LRUCache } from 'lru-cache';

/** Where a cache looks up what it does not remember. */
export interface KeyedSource<V> {
  find(key: string): Promise<V>;
}

const DEFAULT_MAX_ENTRIES = 10_000;

/**
 * The answers of `source`, each remembered for `ttlMs` after it was read (0: nothing is
 * remembered), so that a hot path does not ask the source on every call. An `undefined` answer
 * is remembered like any other. Holds at most `maxEntries` keys; the least recently used go
 * first. Time is read from `now`, so an injected clock decides what has expired.
 */
export class TtlCache<V> implements KeyedSource<V> {
  private readonly entries: LRUCache<string, { value: V }> | undefined;

  constructor(
    private readonly source: KeyedSource<V>,
    ttlMs: number,
    now: () => number,
    maxEntries = DEFAULT_MAX_ENTRIES,
  ) {
    this.entries =
      ttlMs > 0
        ? new LRUCache({
            max: maxEntries,
            ttl: ttlMs,
            // lru-cache takes a start time of 0 to mean "never expires"; a fake clock may read 0.
            perf: { now: () => now() || Number.MIN_VALUE },
            // Reads the clock on every lookup instead of reusing it for a millisecond of real time.
            ttlResolution: 0,
          })
        : undefined;
  }

  async find(key: string): Promise<V> {
    const remembered = this.entries?.get(key);
    if (remembered !== undefined) return remembered.value;
    const value = await this.source.find(key);
    this.entries?.set(key, { value });
    return value;
  }

  /**
   * What is remembered for `key`, at once, without asking the source; undefined when nothing is.
   * Lets a hot path skip the promise of `find` when the answer is at hand.
   */
  peek(key: string): { value: V } | undefined {
    return this.entries?.get(key);
  }

  /** Drops what is remembered for `key`; the next `find` asks the source. */
  forget(key: string): void {
    this.entries?.delete(key);
  }
}
