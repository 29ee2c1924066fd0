import type { PostgresCursor, PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';
import type pg from 'pg';
import { preparedNameOf } from '../billing/hot-statements.js';

/** node-postgres's message when its own `query_timeout` fired: the server has not answered. */
const CLIENT_TIMEOUT_MESSAGE = 'Query read timeout';

/**
 * The pool as Kysely uses it, except that a connection whose statement the server did not answer
 * in time is discarded instead of going back to the pool. The server may still run that
 * statement once it answers again (after a freeze, say): a `begin` would then open a transaction
 * around whatever the connection's next user does, never committed, and rolled back when the
 * server ends the idle session, though each statement in it was answered as a success.
 */
export function discardingUnanswered(pool: pg.Pool): PostgresPool {
  return {
    connect: async () => new PooledConnection(await pool.connect()),
    end: () => pool.end(),
  };
}

class PooledConnection implements PostgresPoolClient {
  private unanswered: Error | undefined;

  constructor(private readonly client: pg.PoolClient) {}

  query<R>(sql: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>>;
  query<R>(cursor: PostgresCursor<R>): PostgresCursor<R>;
  query<R>(
    statement: string | PostgresCursor<R>,
    parameters: ReadonlyArray<unknown> = [],
  ): Promise<PostgresQueryResult<R>> | PostgresCursor<R> {
    // The dialect is given no cursor constructor, so Kysely never passes one.
    if (typeof statement !== 'string') throw new Error('cursors are not supported');
    const name = preparedNameOf(statement);
    const values = [...parameters];
    return this.client
      .query({ text: statement, values, ...(name === undefined ? {} : { name }) })
      .then(
        (result) => result as unknown as PostgresQueryResult<R>,
        (error: unknown) => {
          if (error instanceof Error && error.message === CLIENT_TIMEOUT_MESSAGE)
            this.unanswered = error;
          throw error;
        },
      );
  }

  /** Back to the pool, or, given an error, closed: the server then drops what it still holds. */
  release(): void {
    this.client.release(this.unanswered);
  }
}
