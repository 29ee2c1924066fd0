import { type Kysely, type Migration, type MigrationProvider, Migrator } from 'kysely';
import { admissionMigration } from './migration-0002-admission.js';
import { billingUnderFaultsMigration } from './migration-0003-billing-under-faults.js';
import { workspaceAndFrontDoorMigration } from './migration-0004-workspace-and-front-door.js';
import { tasksMigration } from './migration-0005-tasks.js';
import { incrementalBillingMigration } from './migration-0006-incremental-billing.js';
import { taskContextMigration } from './migration-0007-task-context.js';
import { ledgerRequestIdIndexMigration } from './migration-0008-ledger-request-id-index.js';
import { maintenanceIndexesMigration } from './migration-0009-maintenance-indexes.js';
import { tokenBoundsMigration } from './migration-0010-token-bounds.js';
import { adminChangesMigration } from './migration-0011-admin-changes.js';
import { ledgerStageTimesMigration } from './migration-0012-ledger-stage-times.js';

/**
 * Versioned migrations, applied in name order at start and never edited once released: a change
 * to the schema is a new entry. Types are chosen to mean the same on SQLite and PostgreSQL.
 */
const MIGRATIONS: Record<string, Migration> = {
  '0001_tokens': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('tokens')
        .addColumn('id', 'varchar(64)', (column) => column.primaryKey())
        .addColumn('name', 'varchar(200)', (column) => column.notNull())
        .addColumn('account', 'varchar(200)', (column) => column.notNull())
        .addColumn('created_at', 'bigint', (column) => column.notNull())
        .addColumn('expires_at', 'bigint')
        .addColumn('revoked_at', 'bigint')
        .addColumn('is_admin', 'integer', (column) => column.notNull().defaultTo(0))
        .execute();
      await db.schema.createIndex('tokens_account').on('tokens').column('account').execute();
    },
  },
  '0002_admission_and_billing': admissionMigration,
  '0003_billing_under_faults': billingUnderFaultsMigration,
  '0004_workspace_and_front_door': workspaceAndFrontDoorMigration,
  '0005_tasks': tasksMigration,
  '0006_incremental_billing': incrementalBillingMigration,
  '0007_task_context': taskContextMigration,
  '0008_ledger_request_id_index': ledgerRequestIdIndexMigration,
  '0009_maintenance_indexes': maintenanceIndexesMigration,
  '0010_token_bounds': tokenBoundsMigration,
  '0011_admin_changes': adminChangesMigration,
  '0012_ledger_stage_times': ledgerStageTimesMigration,
};

const provider: MigrationProvider = {
  getMigrations: async () => MIGRATIONS,
};

/**
 * `migrationTableSchema`: on PostgreSQL, the schema the tables live in. Without it Kysely looks
 * for its own bookkeeping tables in every schema of the database, and one found elsewhere (a
 * neighbouring schema, another application) makes it skip creating ours.
 */
export async function migrateToLatest(
  db: Kysely<unknown>,
  migrationTableSchema?: string,
): Promise<void> {
  const { error, results } = await new Migrator({
    db,
    provider,
    ...(migrationTableSchema === undefined ? {} : { migrationTableSchema }),
  }).migrateToLatest();
  const failed = results?.find((result) => result.status === 'Error');
  if (error === undefined && failed === undefined) return;
  const reason = error instanceof Error ? error.message : String(error ?? 'unknown error');
  throw new Error(`database migration ${failed?.migrationName ?? ''} failed: ${reason}`);
}
