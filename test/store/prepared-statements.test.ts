import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { it, type TestContext } from 'node:test';
import { sql } from 'kysely';
import { DEFAULT_DATABASE_LIMITS, openDatabase } from '../../src/store/database/database.js';
import {
  placeholders,
  PREPARED_UP_TO_ROWS,
  preparedNameOf,
  Statement,
  statementsByCount,
} from '../../src/store/billing/hot-statements.js';
import { SqlQuotaStore } from '../../src/store/billing/quota-store.js';
import { SqlTokenLimitsStore } from '../../src/store/token-limits-store.js';
import { SqlUsageStore } from '../../src/store/usage-store.js';
import { billedRow } from '../helpers/row-labels.js';
import { insertToken } from '../helpers/database-backends.js';
import { postgresTarget } from '../helpers/postgres.js';

it('names each hot statement once, by its text', () => {
  const first = new Statement('select ? as prepared_statements_test');
  const again = new Statement('select ? as prepared_statements_test');
  const name = preparedNameOf(first.postgres);
  assert.match(name ?? '', /^imagegate_hot_\d+$/);
  assert.equal(preparedNameOf(again.postgres), name, 'the same text, the same name');
  assert.notEqual(preparedNameOf(new Statement('select ? as another_one').postgres), name);
  assert.equal(preparedNameOf('select 1'), undefined, 'a cold-path query is not prepared');
});

it('keeps a statement built per row count prepared only up to PREPARED_UP_TO_ROWS rows', () => {
  const byCount = statementsByCount((count) => `select ${placeholders(count)} -- by count test`);
  assert.match(preparedNameOf(byCount(1).postgres) ?? '', /^imagegate_hot_\d+$/);
  assert.match(preparedNameOf(byCount(PREPARED_UP_TO_ROWS).postgres) ?? '', /^imagegate_hot_\d+$/);
  assert.equal(preparedNameOf(byCount(PREPARED_UP_TO_ROWS + 1).postgres), undefined);
  assert.equal(preparedNameOf(byCount(256).postgres), undefined);
});

/**
 * A database of one connection, so that pg_prepared_statements is that connection's own, and a
 * token with an image quota; undefined when PostgreSQL is skipped.
 */
async function oneConnection(t: TestContext, imageQuota: number) {
  const target = await postgresTarget(t);
  if (target === undefined) return undefined;
  const database = await openDatabase(target, {
    limits: { ...DEFAULT_DATABASE_LIMITS, poolSize: 1 },
  });
  t.after(() => database.close());
  const tokenId = await insertToken(database);
  await new SqlTokenLimitsStore(database.db).update(tokenId, { imageQuota });
  const preparedStatements = async () =>
    (
      await sql<{ name: string; statement: string; calls: string }>`
        select name, statement, generic_plans + custom_plans as calls from pg_prepared_statements
        where name like 'imagegate_hot_%'`.execute(database.db)
    ).rows;
  return { database, tokenId, quota: new SqlQuotaStore(database), preparedStatements };
}

it('keeps the hot statements prepared on the PostgreSQL connection, and reuses them', async (t) => {
  const set = await oneConnection(t, 100);
  if (set === undefined) return;
  const { tokenId, quota, preparedStatements } = set;
  for (const id of ['a', 'b', 'c'])
    assert.equal(await quota.reserve({ id, tokenId, images: 1 }, 0, 60_000), true);
  const rows = await preparedStatements();
  const reservation = rows.find((row) => row.statement.includes('insert into quota_reservations'));
  assert.ok(reservation, `the reservation statement is prepared: ${JSON.stringify(rows)}`);
  assert.equal(reservation.name, preparedNameOf(reservation.statement));
  assert.equal(Number(reservation.calls), 3, 'parsed once, run three times');
});

it('runs the PostgreSQL request path as the same prepared statements whatever the size of a group', async (t) => {
  const set = await oneConnection(t, 1000);
  if (set === undefined) return;
  const { database, tokenId, quota, preparedStatements } = set;
  const usage = new SqlUsageStore(database);
  const row = () => Object.assign(billedRow(tokenId, 0), { imagesReceived: 0 });
  // Groups on either side of PREPARED_UP_TO_ROWS: reservations and settlements submitted in the
  // same turn of the event loop go in one group, and the ledger's rows of one call in one insert.
  for (const size of [PREPARED_UP_TO_ROWS + 9, 3, 4 * PREPARED_UP_TO_ROWS]) {
    const ids = Array.from({ length: size }, () => randomUUID());
    const held = await Promise.all(
      ids.map((id) => quota.reserve({ id, tokenId, images: 1 }, 0, 60_000)),
    );
    assert.ok(held.every(Boolean));
    const settled = await Promise.all(
      ids.map((reservationId) =>
        quota.settle({
          tokenId,
          reservationId,
          claim: undefined,
          task: undefined,
          caller: { aborted: false },
          alreadyBilled: 0,
          handedOver: false,
          row: { ...row(), imagesDelivered: 1, imagesBilled: 1 },
          imageCostMicros: 0,
        }),
      ),
    );
    assert.ok(settled.every(({ outcome }) => outcome === 'billed'));
    await usage.insert(Array.from({ length: size }, row));
  }
  const rows = await preparedStatements();
  const callsOf = (start: string) => {
    const found = rows.filter((prepared) => prepared.statement.startsWith(start));
    assert.equal(found.length, 1, `one prepared statement ${start}: ${JSON.stringify(rows)}`);
    return Number(found[0]?.calls);
  };
  assert.equal(callsOf('with holds as'), 3, 'the reservations of each group');
  assert.equal(callsOf('with settling as'), 3, 'the settlements of each group');
  assert.equal(callsOf('insert into usage_ledger'), 3, "each call's ledger rows");
  const { rows: standing } = await sql<{ used: number; reserved: number }>`
    select images_used as used, images_reserved as reserved from tokens where id = ${tokenId}`.execute(
    database.db,
  );
  const groups = PREPARED_UP_TO_ROWS + 9 + 3 + 4 * PREPARED_UP_TO_ROWS;
  assert.deepEqual(standing, [{ used: groups, reserved: 0 }]);
  assert.equal((await usage.list({}, 1000)).length, 2 * groups);
});
