import type { Compilable } from 'kysely';
import { Piscina } from 'piscina';
import type { Log } from '../../support/log.js';
import type { ReadRunner } from '../database/long-reads.js';
import { shuttingDown } from '../database/queued-reads.js';
import type { SqliteReadTask } from './sqlite-read-worker.js';

/** A thread idle this long ends, and its connection with it: reports are rare. */
const IDLE_THREAD_MS = 60_000;

/** The worker's module beside this one: source under tsx (tests, bench), JavaScript in dist/. */
function workerFile(): string {
  const extension = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
  return new URL(`./sqlite-read-worker${extension}`, import.meta.url).href;
}

/**
 * Long reads of a serving SQLite database, on one worker thread with a connection of its own:
 * the event loop goes on serving requests while a report scans the ledger. It takes one read at
 * a time, and is meant to sit behind a `QueuedReads` lane with one running: its queue is the
 * lane's, not piscina's, whose destroy() would not return while a read waited in it. In WAL mode
 * a reader never holds up the writer; a read that lasts does keep the log from starting over
 * until it ends.
 */
export class SqliteWorkerReads implements ReadRunner {
  private readonly pool = new Piscina<SqliteReadTask, unknown[]>({
    filename: workerFile(),
    minThreads: 0,
    maxThreads: 1,
    idleTimeout: IDLE_THREAD_MS,
  });

  private reading = false;
  private closed = false;

  constructor(
    private readonly file: string,
    log: Log,
  ) {
    // A thread that dies while idle is reported here; unheard, the event would end the process.
    this.pool.on('error', (error: unknown) =>
      log.warn({ err: String(error) }, 'the SQLite read thread failed'),
    );
  }

  async all<Row>(query: Compilable<Row>): Promise<Row[]> {
    if (this.closed) throw shuttingDown();
    if (this.reading)
      throw new Error('SqliteWorkerReads takes one read at a time: put a QueuedReads in front');
    const compiled = query.compile();
    this.reading = true;
    try {
      return (await this.pool.run({
        file: this.file,
        sql: compiled.sql,
        parameters: compiled.parameters,
      })) as Row[];
    } catch (error) {
      // The thread was ended under the read: a shutdown, not a failure of the read.
      if (this.closed) throw Object.assign(shuttingDown(), { cause: error });
      // The worker's error crosses over without its own fields; its code (SQLITE_BUSY, say)
      // tells an unavailable database from a bad query, as it does for reads on the event loop.
      const code = (error as { cause?: { code?: unknown } }).cause?.code;
      if (error instanceof Error && typeof code === 'string') Object.assign(error, { code });
      throw error;
    } finally {
      this.reading = false;
    }
  }

  /** Ends the thread at once: a read still running is given up, and its caller gets a 503. */
  async close(): Promise<void> {
    this.closed = true;
    await this.pool.destroy();
  }
}
