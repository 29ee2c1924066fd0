import type { Kysely, Migration } from 'kysely';

/**
 * Incremental streams bill image by image before the request settles: `images_billed` counts on
 * the reservation what was billed so far (its `images` shrinks by as much). Each bill now also
 * writes the request's stand-in ledger row, which is what a reclaim after a crash keeps; this
 * count is left for whoever inspects a live reservation.
 */
export const incrementalBillingMigration: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .alterTable('quota_reservations')
      .addColumn('images_billed', 'integer', (column) => column.notNull().defaultTo(0))
      .execute();
  },
};
