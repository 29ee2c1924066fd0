import type { Kysely, Migration } from 'kysely';

/**
 * Asynchronous tasks: one row per task, from submission to expiry. `state` is the task_status the
 * API answers; `runner` and `lease_until` name the node running it and how long that claim holds.
 */
export const tasksMigration: Migration = {
  async up(db: Kysely<unknown>) {
    await db.schema
      .createTable('tasks')
      .addColumn('id', 'varchar(64)', (column) => column.primaryKey())
      .addColumn('request_id', 'varchar(128)', (column) => column.notNull())
      .addColumn('ledger_row_id', 'varchar(40)', (column) => column.notNull())
      .addColumn('owner', 'varchar(300)', (column) => column.notNull())
      .addColumn('token_id', 'varchar(64)')
      .addColumn('account', 'varchar(200)', (column) => column.notNull())
      .addColumn('issuer', 'varchar(16)', (column) => column.notNull())
      .addColumn('model', 'varchar(64)', (column) => column.notNull())
      .addColumn('request', 'text', (column) => column.notNull())
      .addColumn('reservation_id', 'varchar(80)')
      .addColumn('state', 'varchar(16)', (column) => column.notNull())
      .addColumn('submitted_at', 'bigint', (column) => column.notNull())
      .addColumn('scheduled_at', 'bigint')
      .addColumn('ended_at', 'bigint')
      .addColumn('result', 'text')
      .addColumn('error_code', 'varchar(64)')
      .addColumn('error_message', 'text')
      .addColumn('runner', 'varchar(200)')
      .addColumn('lease_until', 'bigint')
      .addColumn('expires_at', 'bigint', (column) => column.notNull())
      .execute();
    await db.schema
      .createIndex('tasks_state_submitted_at')
      .on('tasks')
      .columns(['state', 'submitted_at'])
      .execute();
    await db.schema
      .createIndex('tasks_owner_submitted_at')
      .on('tasks')
      .columns(['owner', 'submitted_at'])
      .execute();
    await db.schema.createIndex('tasks_expires_at').on('tasks').column('expires_at').execute();
  },
};
