import type { Compilable, QueryExecutorProvider } from 'kysely';

/**
 * Reads that may scan many rows: the usage reports, and the task listings. On PostgreSQL they run
 * on the server like any query; on a serving SQLite database they run on a connection of their
 * own in a worker thread (SqliteWorkerReads), since SQLite's connection of the request path runs
 * its statements on the event loop, and a month's report would hold every request meanwhile.
 */
export interface LongReads {
  /** `signal`: the read's caller left; a read still waiting its turn is dropped. */
  all<Row>(query: Compilable<Row>, signal?: AbortSignal): Promise<Row[]>;
  /**
   * Runs `work`, whose reads share one turn of the lane: a read in pages is neither refused
   * half-way nor interleaved with another's pages.
   */
  inOneTurn<T>(work: (read: Read) => Promise<T>, signal?: AbortSignal): Promise<T>;
  close(): Promise<void>;
}

/** Where a lane's reads run (a thread, a pool): the lane keeps the turns (QueuedReads). */
export type ReadRunner = Pick<LongReads, 'all' | 'close'>;

/** One read, within a turn of `LongReads.inOneTurn`. */
export type Read = <Row>(query: Compilable<Row>) => Promise<Row[]>;

/** Runs them on the connection everything else uses: PostgreSQL's pool, or the CLI's SQLite. */
export class InlineReads implements LongReads {
  constructor(private readonly db: QueryExecutorProvider) {}

  async all<Row>(query: Compilable<Row>): Promise<Row[]> {
    return (await this.db.getExecutor().executeQuery(query.compile())).rows;
  }

  inOneTurn<T>(work: (read: Read) => Promise<T>): Promise<T> {
    return work((query) => this.all(query));
  }

  async close(): Promise<void> {}
}
