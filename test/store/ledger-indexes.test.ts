import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { type Database, openDatabase } from '../../src/store/database/database.js';
import { SqlUsageStore } from '../../src/store/usage-store.js';
import { BACKENDS } from '../helpers/database-backends.js';
import { usageRow } from '../helpers/usage-rows.js';
import { undoTokenBounds } from '../helpers/undo-token-bounds.js';

const MIGRATION = '0008_ledger_request_id_index';
/** The indexes each usage query reads through: by time, by token and time, by account and time. */
const QUERY_INDEXES = [
  'usage_ledger_account_time',
  'usage_ledger_created_at',
  'usage_ledger_token_time',
];

async function ledgerIndexes(database: Database): Promise<string[]> {
  const db = database.db;
  const { rows } =
    database.kind === 'sqlite'
      ? await sql<{
          name: string;
        }>`select name from pragma_index_list('usage_ledger') where origin = 'c'`.execute(db)
      : await sql<{ name: string }>`select indexname as name from pg_indexes
          where schemaname = current_schema() and tablename = 'usage_ledger' and indexname <> 'usage_ledger_pkey'`.execute(
          db,
        );
  return rows.map((row) => row.name).sort();
}

for (const [backend, targetFor] of BACKENDS) {
  describe(`usage_ledger indexes on ${backend}`, () => {
    it('keeps the indexes the usage queries read through, and none on the request id', async (t) => {
      const target = await targetFor(t);
      if (target === undefined) return;
      const database = await openDatabase(target);
      t.after(() => database.close());
      assert.deepEqual(await ledgerIndexes(database), QUERY_INDEXES);
    });

    it(`${MIGRATION} drops the request-id index of an earlier release, rows kept`, async (t) => {
      const target = await targetFor(t);
      if (target === undefined) return;
      // A database as the previous release left it: the index there, with a row in it.
      const before = await openDatabase(target);
      const db = before.db;
      // Written first, by today's writer, into columns the undone migrations then take away.
      const row = usageRow(1, { createdAt: 5 });
      await new SqlUsageStore(before).insert([row]);
      await undoTokenBounds(db);
      await sql`create index usage_ledger_request_id on usage_ledger (request_id)`.execute(db);
      await sql`drop index idempotency_keys_running_owner`.execute(db);
      await sql`drop index tasks_state_expires_at`.execute(db);
      await sql`delete from kysely_migration where name in (${MIGRATION}, '0009_maintenance_indexes')`.execute(
        db,
      );
      assert.deepEqual(
        await ledgerIndexes(before),
        [...QUERY_INDEXES, 'usage_ledger_request_id'].sort(),
      );
      await before.close();

      const after = await openDatabase(target);
      t.after(() => after.close());
      assert.deepEqual(await ledgerIndexes(after), QUERY_INDEXES);
      assert.deepEqual(await new SqlUsageStore(after).list({}, 10), [row]);
    });
  });
}

describe('usage_ledger lookups of one request', () => {
  it('reads through the created_at index when bounded by time (SQLite)', async (t) => {
    const database = await openDatabase({ kind: 'sqlite', file: ':memory:' });
    t.after(() => database.close());
    const { rows } = await sql<{ detail: string }>`explain query plan select * from usage_ledger
      where created_at >= ${1} and created_at < ${2} and request_id = ${'r'}`.execute(database.db);
    assert.match(rows.map((row) => row.detail).join('; '), /USING INDEX usage_ledger_created_at/);
  });
});
