import type { Kysely, Migration } from 'kysely';

/**
 * The ledger records the queue's and the storage's shares of a request's time beside the
 * upstream's, so that a stream, whose `Server-Timing` header leaves before they are known, can
 * be told them afterwards. Rows written before stay NULL in both.
 */
export const ledgerStageTimesMigration: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('usage_ledger').addColumn('queue_ms', 'integer').execute();
    await db.schema.alterTable('usage_ledger').addColumn('storage_ms', 'integer').execute();
  },
};
