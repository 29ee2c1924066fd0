import assert from 'node:assert/strict';
import { it } from 'node:test';
import { sql } from 'kysely';
import { jsonParameter } from '../../src/store/database/json-parameter.js';
import { openDatabase } from '../../src/store/database/database.js';
import { postgresTarget } from '../helpers/postgres.js';

it('writes JSON that reads back as the value, with a lone surrogate as U+FFFD', () => {
  const values = {
    plain: 'acme',
    pair: 'a\u{1F600}b',
    loneHigh: 'a\ud800b',
    loneLow: 'a\udc00b',
    reversedPair: '\ude00\ud83d',
    backslashText: 'a\\ud800b',
    escapedBackslashThenLone: 'a\\\ud800',
    nested: [{ deeper: 'x\udbffy' }],
  };
  assert.deepEqual(JSON.parse(jsonParameter(values)), {
    plain: 'acme',
    pair: 'a\u{1F600}b',
    loneHigh: 'a\ufffdb',
    loneLow: 'a\ufffdb',
    reversedPair: '\ufffd\ufffd',
    backslashText: 'a\\ud800b',
    escapedBackslashThenLone: 'a\\\ufffd',
    nested: [{ deeper: 'x\ufffdy' }],
  });
  const wellFormed = { text: 'no surrogates here', n: 1 };
  assert.equal(jsonParameter(wellFormed), JSON.stringify(wellFormed));
});

it("is read by PostgreSQL's json type, where JSON.stringify's lone surrogates are refused", async (t) => {
  const target = await postgresTarget(t);
  if (target === undefined) return;
  const database = await openDatabase(target);
  t.after(() => database.close());
  const value = [{ name: 'a\ud800b\\ud800' }];
  await assert.rejects(
    sql`select ${JSON.stringify(value)}::json ->> 0`.execute(database.db),
    { detail: /surrogate/ },
    'the reason the parameter is mended',
  );
  const { rows } = await sql<{
    name: string;
  }>`select name from json_to_recordset(${jsonParameter(value)}::json) as r (name text)`.execute(
    database.db,
  );
  assert.deepEqual(rows, [{ name: 'a\ufffdb\\ud800' }]);
});
