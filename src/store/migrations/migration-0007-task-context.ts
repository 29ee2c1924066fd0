import type { Kysely, Migration } from 'kysely';

/**
 * What a task needs from its submission's headers when it runs later: the DashScope workspace
 * its ledger row records, and whether its `oss://` inputs name uploads
 * (`X-DashScope-OssResourceResolve: enable`).
 */
export const taskContextMigration: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema.alterTable('tasks').addColumn('workspace', 'varchar(64)').execute();
    await db.schema
      .alterTable('tasks')
      .addColumn('resolve_uploads', 'integer', (column) => column.notNull().defaultTo(0))
      .execute();
  },
};
