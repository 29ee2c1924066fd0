import { type Kysely, type Migration, sql } from 'kysely';

/**
 * The ledger records which DashScope workspace a caller named (`X-DashScope-WorkSpace`) and which
 * front door a request came through (`dashscope`, later others), so that usage can be told apart
 * by both. Every row written before this migration came through the DashScope front door.
 */
export const workspaceAndFrontDoorMigration: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('usage_ledger').addColumn('workspace', 'varchar(64)').execute();
    await db.schema.alterTable('usage_ledger').addColumn('front_door', 'varchar(32)').execute();
    await sql`update usage_ledger set front_door = 'dashscope'`.execute(db);
  },
};
