import { type Kysely, type Migration, sql } from 'kysely';

/**
 * The bounds every token has, each overridable per token (NULL: the deployment's setting): its
 * PENDING tasks, and the bytes and files it may upload per window. Uploads are counted in
 * `upload_usage`, one row per token window and per certificate used. The partial index holds the
 * PENDING tasks only: the submission's bound counts them, in all and per owner, under a lock.
 */
export const tokenBoundsMigration: Migration = {
  async up(db: Kysely<unknown>) {
    for (const column of ['max_pending_tasks', 'upload_mb_per_window', 'upload_files_per_window'])
      await db.schema.alterTable('tokens').addColumn(column, 'integer').execute();
    await db.schema
      .createIndex('tasks_pending_owner')
      .on('tasks')
      .column('owner')
      .where(sql.ref('state'), '=', sql.lit('PENDING'))
      .execute();
    await db.schema
      .createTable('upload_usage')
      .addColumn('scope', 'varchar(200)', (column) => column.primaryKey())
      .addColumn('bytes', 'bigint', (column) => column.notNull())
      .addColumn('files', 'integer', (column) => column.notNull())
      .addColumn('expires_at', 'bigint', (column) => column.notNull())
      .execute();
    await db.schema
      .createIndex('upload_usage_expires_at')
      .on('upload_usage')
      .column('expires_at')
      .execute();
  },
};
