import { type Kysely, type Migration, sql } from 'kysely';

/**
 * Indexes for two queries a serving node runs on its own, over tables that hold a day of rows:
 *
 * - The heartbeat renews the leases of its requests' running Idempotency-Key claims by owner,
 *   every TTL / 3. With no index on the owner, that read every key of the last 24 hours: seconds
 *   per renewal at millions of keys, on SQLite on the event loop. The index is partial, so it
 *   holds the running claims only; the renewal names `state = 'running'` as a literal, so that
 *   a plan made before the parameters are known (PostgreSQL's generic plans) can use it too.
 * - The task sweep deletes finished tasks past their expiry. SQLite chose the index on
 *   (state, submitted_at) for it, so it read every finished task of the day, and each one's
 *   stored request, once a minute; on (state, expires_at) it reads the expired ones only.
 */
export const maintenanceIndexesMigration: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createIndex('idempotency_keys_running_owner')
      .on('idempotency_keys')
      .column('owner')
      .where(sql.ref('state'), '=', sql.lit('running'))
      .execute();
    await db.schema
      .createIndex('tasks_state_expires_at')
      .on('tasks')
      .columns(['state', 'expires_at'])
      .execute();
  },
};
