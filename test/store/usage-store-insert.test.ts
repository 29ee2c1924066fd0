import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { STAND_IN_STATUS } from '../../src/domain/usage-row.js';
import { openDatabase } from '../../src/store/database/database.js';
import { SqlUsageStore } from '../../src/store/usage-store.js';
import { BACKENDS } from '../helpers/database-backends.js';
import { usageRow } from '../helpers/usage-rows.js';

// A request that billed images before its end has a stand-in row from its first bill on; the
// row the ledger writes when the request ends replaces it. Any other row already there stays:
// a retried batch adds nothing, and a settlement's row is never overwritten by a later one.
for (const [backend, targetFor] of BACKENDS) {
  describe(`usage ledger inserts on ${backend}`, () => {
    it('replace a stand-in row, keep any other row, and write new rows, in one batch', async (t) => {
      const target = await targetFor(t);
      if (target === undefined) return;
      const database = await openDatabase(target);
      t.after(() => database.close());
      const store = new SqlUsageStore(database);
      const standIn = usageRow(2, {
        status: STAND_IN_STATUS,
        errorCode: 'Abandoned',
        createdAt: 1,
      });
      const settled = usageRow(3, { createdAt: 2 });
      await store.insert([standIn, settled]);

      const ended = { ...standIn, status: 499, errorCode: 'CallerGone' as const, gatewayMs: 900 };
      const late = { ...settled, status: 503, errorCode: 'Overloaded' as const, imagesBilled: 0 };
      const fresh = usageRow(1, { createdAt: 3 });
      await store.insert([ended, late, fresh]);
      assert.deepEqual(await store.list({}, 10), [ended, settled, fresh]);

      // A stand-in that counts an image more than the request's own row (a bill whose answer was
      // lost): the row keeps the images billed and delivered and their cost, and takes the rest.
      const counted = usageRow(3, {
        status: STAND_IN_STATUS,
        errorCode: 'Abandoned',
        createdAt: 4,
      });
      await store.insert([counted]);
      const stopped = {
        ...counted,
        status: 500,
        errorCode: 'InternalError' as const,
        imagesDelivered: 2,
        imagesBilled: 2,
        costMicros: 80_000,
      };
      await store.insert([stopped]);
      const [kept] = await store.list({ since: 4 }, 10);
      assert.deepEqual(kept, {
        ...stopped,
        imagesDelivered: 3,
        imagesBilled: 3,
        costMicros: counted.costMicros,
      });

      await store.insert([{ ...ended, status: STAND_IN_STATUS, errorCode: 'Abandoned' }]);
      assert.deepEqual(
        await store.list({ until: 4 }, 10),
        [ended, settled, fresh],
        'a stand-in replaces nothing',
      );
    });
  });
}
