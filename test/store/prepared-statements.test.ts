import assert from 'node:assert/strict';
import { it } from 'node:test';
import { sql } from 'kysely';
import { DEFAULT_DATABASE_LIMITS, openDatabase } from '../../src/store/database.js';
import {
  placeholders,
  PREPARED_UP_TO_ROWS,
  preparedNameOf,
  Statement,
  statementsByCount,
} from '../../src/store/hot-statements.js';
import { SqlQuotaStore } from '../../src/store/quota-store.js';
import { SqlTokenLimitsStore } from '../../src/store/token-limits-store.js';
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

it('keeps the hot statements prepared on the PostgreSQL connection, and reuses them', async (t) => {
  const target = await postgresTarget(t);
  if (target === undefined) return;
  // One connection: the statistics below are that connection's own.
  const database = await openDatabase(target, {
    limits: { ...DEFAULT_DATABASE_LIMITS, poolSize: 1 },
  });
  t.after(() => database.close());
  const tokenId = await insertToken(database);
  await new SqlTokenLimitsStore(database.db).update(tokenId, { imageQuota: 100 });
  const quota = new SqlQuotaStore(database);
  for (const id of ['a', 'b', 'c'])
    assert.equal(await quota.reserve({ id, tokenId, images: 1 }, 0, 60_000), true);
  const { rows } = await sql<{ name: string; statement: string; calls: string }>`
    select name, statement, generic_plans + custom_plans as calls from pg_prepared_statements
    where name like 'imagegate_hot_%'`.execute(database.db);
  const reservation = rows.find((row) => row.statement.includes('insert into quota_reservations'));
  assert.ok(reservation, `the reservation statement is prepared: ${JSON.stringify(rows)}`);
  assert.equal(reservation.name, preparedNameOf(reservation.statement));
  assert.equal(Number(reservation.calls), 3, 'parsed once, run three times');
});
