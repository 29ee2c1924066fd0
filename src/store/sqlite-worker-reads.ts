import type { Compilable } from 'kysely';
import { Piscina } from 'piscina';
import { GatewayError } from '../errors/gateway-error.js';
import type { Log } from '../support/log.js';
import { TurnQueue } from '../support/turn-queue.js';
import type { LongReads, Read } from './long-reads.js';
import type { SqliteReadTask } from './sqlite-read-worker.js';

/** A thread idle this long ends, and its connection with it: reports are rare. */
const IDLE_THREAD_MS = 60_000;

/** One lane of long reads: what a refusal calls it, and how many reads may wait their turn. */
export interface ReadLane {
  /** The refusal's message begins with it: "task listings are busy". */
  busy: string;
  /** Reads waiting behind the running one; one more is refused with 503 Overloaded. */
  waiting: number;
}

/** The worker's module beside this one: source under tsx (tests, bench), JavaScript in dist/. */
function workerFile(): string {
  const extension = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
  return new URL(`./sqlite-read-worker${extension}`, import.meta.url).href;
}

/**
 * Long reads of a serving SQLite database, on one worker thread with a connection of its own:
 * the event loop goes on serving requests while a report scans the ledger. The reads of one lane
 * (reports, or listings) take turns rather than take more cores from the requests, and a read
 * that finds `lane.waiting` others waiting is refused at once (503 Overloaded, Retry-After). The
 * turns are kept here, not in piscina's queue, whose destroy() would not return while a read
 * waited in it. In WAL mode a reader never holds up the writer; a read that lasts does keep the
 * log from starting over until it ends.
 */
export class SqliteWorkerReads implements LongReads {
  private readonly pool = new Piscina<SqliteReadTask, unknown[]>({
    filename: workerFile(),
    minThreads: 0,
    maxThreads: 1,
    idleTimeout: IDLE_THREAD_MS,
  });

  private readonly turns: TurnQueue;
  private closed = false;

  constructor(
    private readonly file: string,
    log: Log,
    lane: ReadLane,
  ) {
    this.turns = new TurnQueue({
      running: 1,
      waiting: lane.waiting,
      refusal: () =>
        new GatewayError(
          'Overloaded',
          `${lane.busy}: one read running and ${lane.waiting} waiting, the most this node queues; retry shortly`,
          { 'Retry-After': '1' },
        ),
    });
    // A thread that dies while idle is reported here; unheard, the event would end the process.
    this.pool.on('error', (error: unknown) =>
      log.warn({ err: String(error) }, 'the SQLite read thread failed'),
    );
  }

  all<Row>(query: Compilable<Row>, signal?: AbortSignal): Promise<Row[]> {
    return this.inOneTurn((read) => read(query), signal);
  }

  async inOneTurn<T>(work: (read: Read) => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (this.closed) throw shuttingDown();
    // A read whose caller left while it waited is dropped; one running cannot be stopped.
    const turn = await this.turns.take(signal);
    try {
      return await work((query) => this.run(query));
    } finally {
      turn.release();
    }
  }

  private async run<Row>(query: Compilable<Row>): Promise<Row[]> {
    const compiled = query.compile();
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
    }
  }

  /**
   * Ends the thread at once: the reads waiting their turn are refused, and the one running is
   * given up; each caller gets an error.
   */
  async close(): Promise<void> {
    this.closed = true;
    this.turns.refuseWaiting(shuttingDown());
    await this.pool.destroy();
  }
}

function shuttingDown(): GatewayError {
  return new GatewayError('Overloaded', 'the gateway is shutting down; retry shortly', {
    'Retry-After': '1',
  });
}
