import { type Kysely, sql } from 'kysely';
import type { DatabaseSchema } from '../../src/store/database/schema.js';

/**
 * Takes a migrated database back to before 0010_token_bounds, as an earlier release left it (the
 * ledger's queue_ms and storage_ms, of 0012, go too).
 */
export async function undoTokenBounds(db: Kysely<DatabaseSchema>): Promise<void> {
  // Migrations after 0010 go first: the migrator runs only a list whose applied part is a prefix.
  for (const column of ['queue_ms', 'storage_ms'])
    await sql`alter table usage_ledger drop column ${sql.ref(column)}`.execute(db);
  await sql`delete from kysely_migration where name = '0012_ledger_stage_times'`.execute(db);
  await sql`drop table admin_changes`.execute(db);
  await sql`delete from kysely_migration where name = '0011_admin_changes'`.execute(db);
  await sql`drop table upload_usage`.execute(db);
  await sql`drop index tasks_pending_owner`.execute(db);
  for (const column of ['max_pending_tasks', 'upload_mb_per_window', 'upload_files_per_window'])
    await sql`alter table tokens drop column ${sql.ref(column)}`.execute(db);
  await sql`delete from kysely_migration where name = '0010_token_bounds'`.execute(db);
}
