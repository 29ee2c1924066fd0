import type pg from 'pg';
import { eventually } from './waits.js';

/**
 * Resolves once no other session of `client`'s database runs a statement or holds a transaction
 * open: what was sent before then has been committed or rolled back, and nothing of it can change
 * later. For a cluster that was frozen, read after it runs again.
 */
export async function sessionsSettled(client: pg.Client, timeoutMs = 10_000): Promise<void> {
  await eventually(
    async () => {
      const { rows } = await client.query<{ busy: number }>(
        `select count(*)::int as busy from pg_stat_activity
          where datname = current_database() and pid <> pg_backend_pid()
            and backend_type = 'client backend'
            and (state = 'active' or state like 'idle in transaction%')`,
      );
      return rows[0]?.busy === 0;
    },
    timeoutMs,
    'every other session of the database done with its statements and transactions',
  );
}
