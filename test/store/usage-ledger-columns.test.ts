import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { openDatabase } from '../../src/store/database/database.js';
import { toLedgerRow } from '../../src/store/billing/usage-rows.js';
import { SqlUsageStore } from '../../src/store/usage-store.js';
import { BACKENDS } from '../helpers/database-backends.js';
import { usageRow } from '../helpers/usage-rows.js';
import { undoTokenBounds } from '../helpers/undo-token-bounds.js';

const MIGRATION = '0004_workspace_and_front_door';

for (const [backend, targetFor] of BACKENDS) {
  describe(`usage_ledger workspace and front_door on ${backend}`, () => {
    it('keeps a row’s workspace and front door, and an absent workspace as absent', async (t) => {
      const target = await targetFor(t);
      if (target === undefined) return;
      const database = await openDatabase(target);
      t.after(() => database.close());
      const store = new SqlUsageStore(database);
      const named = usageRow(1, { workspace: 'llm-ws_01 A', frontDoor: 'openai', createdAt: 1 });
      const plain = usageRow(1, { createdAt: 2 });
      await store.insert([named, plain]);
      const [first, second] = await store.list({}, 10);
      assert.deepEqual(first, named);
      assert.deepEqual(second, plain);
      assert.equal(second?.workspace, undefined);
      assert.equal(second?.frontDoor, 'dashscope');
    });

    it(`${MIGRATION} gives rows written before it the DashScope front door and no workspace`, async (t) => {
      const target = await targetFor(t);
      if (target === undefined) return;
      // A database as the previous release left it: migrated up to 0003, with a row in it.
      const before = await openDatabase(target);
      await undoTokenBounds(before.db);
      await sql`drop index idempotency_keys_running_owner`.execute(before.db);
      await sql`drop index tasks_state_expires_at`.execute(before.db);
      await sql`delete from kysely_migration where name = '0009_maintenance_indexes'`.execute(
        before.db,
      );
      await sql`create index usage_ledger_request_id on usage_ledger (request_id)`.execute(
        before.db,
      );
      await sql`delete from kysely_migration where name = '0008_ledger_request_id_index'`.execute(
        before.db,
      );
      await sql`delete from kysely_migration where name = '0007_task_context'`.execute(before.db);
      await sql`alter table quota_reservations drop column images_billed`.execute(before.db);
      await sql`delete from kysely_migration where name = '0006_incremental_billing'`.execute(
        before.db,
      );
      await sql`drop table tasks`.execute(before.db);
      await sql`delete from kysely_migration where name = '0005_tasks'`.execute(before.db);
      await sql`alter table usage_ledger drop column workspace`.execute(before.db);
      await sql`alter table usage_ledger drop column front_door`.execute(before.db);
      await sql`delete from kysely_migration where name = ${MIGRATION}`.execute(before.db);
      const old = usageRow(2);
      const oldColumns = toLedgerRow(old);
      delete oldColumns.workspace;
      delete oldColumns.front_door;
      delete oldColumns.queue_ms;
      delete oldColumns.storage_ms;
      await before.db.insertInto('usage_ledger').values(oldColumns).execute();
      await before.close();

      const after = await openDatabase(target);
      t.after(() => after.close());
      const [row] = await new SqlUsageStore(after).list({}, 10);
      assert.deepEqual(row, old);
      const raw = await after.db.selectFrom('usage_ledger').select('front_door').execute();
      assert.deepEqual(raw, [{ front_door: 'dashscope' }]);
    });
  });
}
