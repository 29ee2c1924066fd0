import type { ColumnDefinitionBuilderCallback, ColumnDataType, Kysely, Migration } from 'kysely';

/**
 * Per-token limits, quota reservations, the usage ledger and idempotency keys. One column per
 * ALTER: SQLite adds a single column per statement.
 */
export const admissionMigration: Migration = {
  async up(db: Kysely<unknown>) {
    const tokenColumns: [string, ColumnDataType, ColumnDefinitionBuilderCallback?][] = [
      ['image_quota', 'bigint'],
      ['images_used', 'bigint', (column) => column.notNull().defaultTo(0)],
      ['images_reserved', 'bigint', (column) => column.notNull().defaultTo(0)],
      ['requests_per_minute', 'integer'],
      ['max_concurrent', 'integer'],
      ['allowed_models', 'varchar(400)'],
    ];
    for (const [name, type, build] of tokenColumns)
      await db.schema.alterTable('tokens').addColumn(name, type, build).execute();

    await db.schema
      .createTable('quota_reservations')
      .addColumn('id', 'varchar(80)', (column) => column.primaryKey())
      .addColumn('token_id', 'varchar(64)', (column) => column.notNull())
      .addColumn('images', 'integer', (column) => column.notNull())
      .addColumn('created_at', 'bigint', (column) => column.notNull())
      .addColumn('expires_at', 'bigint', (column) => column.notNull())
      .addColumn('ledger_row', 'text')
      .execute();
    await db.schema
      .createIndex('quota_reservations_expires_at')
      .on('quota_reservations')
      .column('expires_at')
      .execute();

    await db.schema
      .createTable('usage_ledger')
      .addColumn('id', 'varchar(40)', (column) => column.primaryKey())
      .addColumn('request_id', 'varchar(128)', (column) => column.notNull())
      .addColumn('token_id', 'varchar(64)')
      .addColumn('account', 'varchar(200)', (column) => column.notNull())
      .addColumn('model', 'varchar(64)')
      .addColumn('mode', 'varchar(32)')
      .addColumn('channel', 'varchar(200)')
      .addColumn('status', 'integer', (column) => column.notNull())
      .addColumn('error_code', 'varchar(64)')
      .addColumn('images_requested', 'integer', (column) => column.notNull())
      .addColumn('images_produced', 'integer', (column) => column.notNull())
      .addColumn('output_size', 'varchar(32)')
      .addColumn('cost_micros', 'bigint', (column) => column.notNull())
      .addColumn('gateway_ms', 'integer', (column) => column.notNull())
      .addColumn('upstream_ms', 'integer')
      .addColumn('replayed', 'integer', (column) => column.notNull().defaultTo(0))
      .addColumn('created_at', 'bigint', (column) => column.notNull())
      .execute();
    await db.schema
      .createIndex('usage_ledger_created_at')
      .on('usage_ledger')
      .column('created_at')
      .execute();
    await db.schema
      .createIndex('usage_ledger_token_time')
      .on('usage_ledger')
      .columns(['token_id', 'created_at'])
      .execute();
    await db.schema
      .createIndex('usage_ledger_account_time')
      .on('usage_ledger')
      .columns(['account', 'created_at'])
      .execute();
    await db.schema
      .createIndex('usage_ledger_request_id')
      .on('usage_ledger')
      .column('request_id')
      .execute();

    await db.schema
      .createTable('idempotency_keys')
      .addColumn('scope', 'varchar(264)', (column) => column.notNull())
      .addColumn('idempotency_key', 'varchar(255)', (column) => column.notNull())
      .addColumn('fingerprint', 'varchar(64)', (column) => column.notNull())
      .addColumn('state', 'varchar(16)', (column) => column.notNull())
      .addColumn('owner', 'varchar(200)', (column) => column.notNull())
      .addColumn('lease_until', 'bigint', (column) => column.notNull())
      .addColumn('request_id', 'varchar(128)', (column) => column.notNull())
      .addColumn('status', 'integer')
      .addColumn('response_body', 'text')
      .addColumn('response_headers', 'text')
      .addColumn('created_at', 'bigint', (column) => column.notNull())
      .addColumn('expires_at', 'bigint', (column) => column.notNull())
      .addPrimaryKeyConstraint('idempotency_keys_pk', ['scope', 'idempotency_key'])
      .execute();
    await db.schema
      .createIndex('idempotency_keys_expires_at')
      .on('idempotency_keys')
      .column('expires_at')
      .execute();
  },
};
