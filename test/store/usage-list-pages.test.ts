import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Database } from '../../src/store/database/database.js';
import { SqlUsageStore } from '../../src/store/usage-store.js';
import { BACKENDS, openNodes } from '../helpers/database-backends.js';
import { JAN_1, usageRow } from '../helpers/usage-rows.js';

/** More than two pages of rows, seven to a millisecond, so that pages end inside a millisecond. */
const ROWS = 4_700;

for (const [name, targetFor] of BACKENDS) {
  describe(`a usage listing read a page at a time (${name})`, () => {
    it('answers every row once, in time order, as one query would, up to the limit', async (t) => {
      const nodes = await openNodes(t, targetFor, 1);
      if (nodes === undefined) return;
      const [database] = nodes as [Database];
      const usage = new SqlUsageStore(database);
      const rows = Array.from({ length: ROWS }, (_, index) =>
        usageRow(1, {
          createdAt: JAN_1 + Math.floor(index / 7),
          tokenId: index % 5 === 0 ? 'tok_b' : 'tok_a',
        }),
      );
      await usage.insert(rows);

      const oneQuery = async (tokenId: string | undefined, limit: number) => {
        let query = database.db.selectFrom('usage_ledger').select('id');
        if (tokenId !== undefined) query = query.where('token_id', '=', tokenId);
        const answer = await query.orderBy('created_at').orderBy('id').limit(limit).execute();
        return answer.map((row) => row.id);
      };
      for (const [tokenId, limit] of [
        [undefined, 100_000],
        [undefined, 4_001],
        [undefined, 2_000],
        ['tok_a', 100_000],
        ['tok_b', 3],
      ] as const) {
        const listed = await usage.list({ tokenId }, limit);
        const expected = await oneQuery(tokenId, limit);
        assert.deepEqual(
          listed.map((row) => row.id),
          expected,
          `${tokenId ?? 'every token'}, limit ${limit}`,
        );
        assert.equal(new Set(expected).size, expected.length);
      }
      assert.equal((await usage.list({}, 100_000)).length, ROWS);
    });
  });
}
