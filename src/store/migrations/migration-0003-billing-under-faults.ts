import { type Kysely, type Migration, sql } from 'kysely';

/**
 * The ledger tells apart the images an upstream reported, the images the gateway received, the
 * images delivered to the caller and the images billed, so that reconciling against an
 * upstream's invoice and against the callers' bills is a query. `images_produced` meant
 * "delivered" and becomes `images_delivered`; older rows get the only values they can have.
 * Idempotency keys keep the generation's result, stored in the settlement's transaction, so
 * that a repeat replays exactly what was billed.
 */
export const billingUnderFaultsMigration: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .alterTable('usage_ledger')
      .renameColumn('images_produced', 'images_delivered')
      .execute();
    await db.schema.alterTable('usage_ledger').addColumn('images_reported', 'integer').execute();
    await db.schema
      .alterTable('usage_ledger')
      .addColumn('images_received', 'integer', (column) => column.notNull().defaultTo(0))
      .execute();
    await db.schema
      .alterTable('usage_ledger')
      .addColumn('images_billed', 'integer', (column) => column.notNull().defaultTo(0))
      .execute();
    await sql`update usage_ledger set images_received = images_delivered,
      images_billed = case when status = 200 and replayed = 0 then images_delivered else 0 end`.execute(
      db,
    );
    await db.schema.alterTable('idempotency_keys').addColumn('result', 'text').execute();
  },
};
