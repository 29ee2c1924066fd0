import type { Kysely, Migration } from 'kysely';

/**
 * Drops the ledger's request-id index. No query of the gateway reads the ledger by request id
 * (usage is read by time, token and account), yet every settlement paid for the index: a caller's
 * own `X-Request-Id`, often a random UUID set by a proxy in front, lands at a random place in it,
 * so each group commit dirtied and wrote about one index page per row. A lookup of one request's
 * row stays quick when bounded by time, through the `created_at` index (docs/admission.md).
 */
export const ledgerRequestIdIndexMigration: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.dropIndex('usage_ledger_request_id').ifExists().execute();
  },
};
