import type { BlobStore } from './blob-store.js';
import { folderExpiredAt } from './object-keys.js';
import { type Log, silentLog } from '../support/log.js';

export interface SweepResult {
  foldersDeleted: number;
  objectsDeleted: number;
}

export interface SweeperOptions {
  /** Time between sweeps; 0 means this node never sweeps on its own (sweepOnce still works). */
  intervalMs: number;
  /** Milliseconds since the epoch; injectable for tests. */
  now?: () => number;
  log?: Log;
}

const silent: Log = silentLog;

/**
 * Deletes every expiry folder whose hour is over, on either backend. Deleting is idempotent, so
 * several nodes may sweep the same store. A folder this layout did not make is never touched.
 */
export class Sweeper {
  private readonly now: () => number;
  private log: Log;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<SweepResult> | undefined;

  constructor(
    private readonly blobs: BlobStore,
    private readonly options: SweeperOptions,
  ) {
    this.now = options.now ?? Date.now;
    this.log = options.log ?? silent;
  }

  /** Sweeps now and then every interval; the timer never keeps the process alive. */
  start(log?: Log): void {
    if (log !== undefined) this.log = log;
    if (this.timer !== undefined || this.options.intervalMs === 0) return;
    const tick = () => {
      // A sweep still running when the next is due is simply not doubled.
      if (this.running !== undefined) return;
      this.sweepOnce().catch((error: unknown) =>
        this.log.warn({ err: error }, 'image sweep failed; retrying at the next interval'),
      );
    };
    this.timer = setInterval(tick, this.options.intervalMs);
    this.timer.unref();
    tick();
  }

  /** Stops the timer and waits for a sweep in progress. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running?.catch(() => undefined);
  }

  /** One sweep; concurrent calls share the sweep in progress. */
  sweepOnce(): Promise<SweepResult> {
    this.running ??= this.sweep().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async sweep(): Promise<SweepResult> {
    const nowSeconds = Math.floor(this.now() / 1000);
    const result: SweepResult = { foldersDeleted: 0, objectsDeleted: 0 };
    for (const folder of await this.blobs.listFolders()) {
      const expiredAt = folderExpiredAt(folder);
      if (expiredAt === undefined || expiredAt > nowSeconds) continue;
      result.objectsDeleted += await this.blobs.deleteFolder(folder);
      result.foldersDeleted += 1;
    }
    if (result.foldersDeleted > 0) this.log.info({ ...result }, 'deleted expired images');
    return result;
  }
}
