import type { Kysely, Migration } from 'kysely';

/**
 * Who changed which token, when, and which fields (never the JWT): one row per create, update or
 * revoke by the admin API or the CLI, read by token at GET /admin/changes.
 */
export const adminChangesMigration: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('admin_changes')
      .addColumn('id', 'varchar(40)', (column) => column.primaryKey())
      .addColumn('at', 'bigint', (column) => column.notNull())
      .addColumn('actor', 'varchar(200)', (column) => column.notNull())
      .addColumn('action', 'varchar(20)', (column) => column.notNull())
      .addColumn('token_id', 'varchar(64)', (column) => column.notNull())
      .addColumn('fields', 'varchar(2000)', (column) => column.notNull())
      .execute();
    await db.schema
      .createIndex('admin_changes_token_at')
      .on('admin_changes')
      .columns(['token_id', 'at'])
      .execute();
  },
};
