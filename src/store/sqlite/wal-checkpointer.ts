import type BetterSqlite3 from 'better-sqlite3';
import { Piscina } from 'piscina';
import { type Log, warnAtMostEvery } from '../../support/log.js';
import type { WalCheckpointReport, WalCheckpointTask } from './wal-checkpoint-worker.js';
import { AUTOCHECKPOINT_PAGES, WAL_FILE_LIMIT_BYTES } from './wal-limits.js';

/** Failures, and a log that cannot start over, are logged once per this long at most. */
const WARNING_INTERVAL_MS = 60_000;

/**
 * The worker's module beside this one: source under tsx (tests, bench), JavaScript in dist/.
 * Piscina loads either, as it does the local engine's render worker.
 */
function defaultWorkerFile(): string {
  const extension = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
  return new URL(`./wal-checkpoint-worker${extension}`, import.meta.url).href;
}

export interface WalCheckpointerOptions {
  intervalMs: number;
  log: Log;
  now?: () => number;
  /** Tests give a worker that fails. */
  workerFile?: string;
  /**
   * How long a log that cannot start over is reported: held by something (another process's open
   * transaction, a lock), it grows on disk until that ends. Tests give a small one.
   */
  largeLogBytes?: number;
}

/**
 * Moves SQLite's write-ahead-log checkpoints off the event loop. By default the connection that
 * commits the 1000th page of the log copies the log into the database file and flushes both,
 * inside that commit: on the request path, every few thousand requests, for milliseconds. Here
 * that connection does not checkpoint; a worker thread with a connection of its own checkpoints
 * every interval, and starts a long log over so that it stays bounded under a load that never
 * pauses (see the worker). While background checkpoints fail, the connection checkpoints inline
 * again, so the log stays bounded whatever happens to the worker.
 */
export class WalCheckpointer {
  private pool: Piscina<WalCheckpointTask, WalCheckpointReport> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private inline = true;
  private stopped = false;
  private readonly warnFailure: (fields: object, message: string) => void;
  private readonly warnLargeLog: (fields: object, message: string) => void;

  constructor(
    private readonly file: string,
    private readonly connection: BetterSqlite3.Database,
    private readonly options: WalCheckpointerOptions,
  ) {
    this.warnFailure = warnAtMostEvery(options.log, WARNING_INTERVAL_MS, options.now);
    this.warnLargeLog = warnAtMostEvery(options.log, WARNING_INTERVAL_MS, options.now);
  }

  /** Whether the connection checkpoints by itself now (before start, or after a failure). */
  get checkpointsInline(): boolean {
    return this.inline;
  }

  start(): void {
    if (this.pool !== undefined || this.stopped) return;
    this.pool = new Piscina<WalCheckpointTask, WalCheckpointReport>({
      filename: this.options.workerFile ?? defaultWorkerFile(),
      minThreads: 1,
      maxThreads: 1,
    });
    // A worker that dies while idle is replaced by the pool; unheard, this would end the process.
    this.pool.on('error', (error: unknown) => this.failed(error));
    this.setInline(false);
    this.timer = setInterval(() => {
      this.running ??= this.checkpoint(false).finally(() => (this.running = undefined));
    }, this.options.intervalMs);
    // The gateway's shutdown stops it; nothing else should wait for it.
    this.timer.unref();
  }

  /** Runs one last checkpoint, then ends the thread. The connection is not touched afterwards. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    this.timer = undefined;
    const pool = this.pool;
    if (pool === undefined) return;
    await this.running;
    await this.checkpoint(true);
    this.pool = undefined;
    await pool.close();
  }

  private async checkpoint(last: boolean): Promise<void> {
    const pool = this.pool;
    if (pool === undefined) return;
    try {
      const report = await pool.run({ file: this.file, last });
      this.setInline(false);
      if (
        !report.startsOver &&
        report.logBytes >= (this.options.largeLogBytes ?? WAL_FILE_LIMIT_BYTES)
      )
        this.warnLargeLog(
          { logMiB: Math.round(report.logBytes / (1024 * 1024)) },
          'the SQLite write-ahead log could not start over: a read or a lock of another connection holds it, and it grows on disk until that ends',
        );
    } catch (error) {
      this.failed(error);
    }
  }

  private failed(error: unknown): void {
    this.setInline(true);
    this.warnFailure(
      { detail: error instanceof Error ? error.message : String(error) },
      'a background SQLite checkpoint failed; the database checkpoints inline until one succeeds',
    );
  }

  private setInline(inline: boolean): void {
    // Once stopped, the connection is about to close (or closed): leave it alone.
    if (inline === this.inline || this.stopped) return;
    this.inline = inline;
    this.connection.pragma(`wal_autocheckpoint = ${inline ? AUTOCHECKPOINT_PAGES : 0}`);
  }
}
