import type { Log } from '../support/log.js';
import type { UsageRow } from '../domain/usage-row.js';

export interface LedgerSink {
  insert(rows: readonly UsageRow[]): Promise<void>;
}

export interface BatchingOptions {
  /** A batch this large is written at once, without waiting for the interval. */
  batchSize: number;
  flushIntervalMs: number;
  /** Past this many rows waiting (the database down for long), the oldest are logged and dropped. */
  maxBuffered: number;
}

const CLOSE_ATTEMPTS = 3;
const CLOSE_RETRY_MS = 200;

/**
 * Usage rows of requests that billed nothing (rejections, failures, replays), written in batches
 * off the request path. A failed write keeps its rows for the next attempt; close() writes what is
 * left, and rows that still cannot be written are logged whole rather than lost silently.
 */
export class BatchingLedger {
  private buffer: UsageRow[] = [];
  private writing: Promise<void> = Promise.resolve();
  private readonly timer: NodeJS.Timeout;
  private closed = false;

  constructor(
    private readonly sink: LedgerSink,
    private readonly options: BatchingOptions,
    private readonly log: Log,
  ) {
    this.timer = setInterval(
      () => void this.flush().catch(() => undefined),
      options.flushIntervalMs,
    );
    this.timer.unref();
  }

  get pending(): number {
    return this.buffer.length;
  }

  record(row: UsageRow): void {
    if (this.closed) {
      // Only a request still finishing after close() lands here; it must not vanish.
      void this.sink.insert([row]).catch((error: unknown) => this.logLost([row], error));
      return;
    }
    this.buffer.push(row);
    if (this.buffer.length > this.options.maxBuffered) {
      const dropped = this.buffer.splice(0, this.buffer.length - this.options.maxBuffered);
      this.logLost(dropped, new Error('ledger buffer full'));
    }
    if (this.buffer.length >= this.options.batchSize) void this.flush().catch(() => undefined);
  }

  /** Writes every row recorded so far; rejects when the database refused them (they are kept). */
  flush(): Promise<void> {
    const next = this.writing.then(() => this.writeBuffered());
    this.writing = next.catch(() => undefined);
    return next;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    for (let attempt = 1; attempt <= CLOSE_ATTEMPTS; attempt++) {
      try {
        await this.flush();
        break;
      } catch {
        if (attempt < CLOSE_ATTEMPTS)
          await new Promise((resolve) => setTimeout(resolve, CLOSE_RETRY_MS));
      }
    }
    this.closed = true;
    if (this.buffer.length > 0) {
      this.logLost(this.buffer, new Error('database unavailable at shutdown'));
      this.buffer = [];
    }
  }

  private async writeBuffered(): Promise<void> {
    while (this.buffer.length > 0) {
      const batch = this.buffer.splice(0, this.options.batchSize);
      try {
        await this.sink.insert(batch);
      } catch (error) {
        this.buffer.unshift(...batch);
        this.log.warn(
          { err: error instanceof Error ? error.message : String(error), rows: this.buffer.length },
          'usage ledger write failed; rows kept for the next attempt',
        );
        throw error;
      }
    }
  }

  private logLost(rows: readonly UsageRow[], error: unknown): void {
    this.log.error(
      { err: error instanceof Error ? error.message : String(error), rows },
      'usage ledger rows could not be written; they are in this log line',
    );
  }
}
