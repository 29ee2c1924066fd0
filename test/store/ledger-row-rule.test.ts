import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { STAND_IN_STATUS, type UsageRow } from '../../src/domain/usage-row.js';
import type { Database } from '../../src/store/database/database.js';
import { SqlQuotaStore } from '../../src/store/billing/quota-store.js';
import { writeLedgerRowsIn } from '../../src/store/billing/ledger-writer.js';
import { SqlTokenLimitsStore } from '../../src/store/token-limits-store.js';
import { SqlUsageStore } from '../../src/store/usage-store.js';
import { BACKENDS, insertToken, openNodes } from '../helpers/database-backends.js';
import { usageRow } from '../helpers/usage-rows.js';

async function rowOf(database: Database, id: string): Promise<UsageRow | undefined> {
  return (await new SqlUsageStore(database).list({}, 1000)).find((row) => row.id === id);
}

function standIn(billed: number, overrides: Partial<UsageRow> = {}): UsageRow {
  return usageRow(billed, {
    status: STAND_IN_STATUS,
    errorCode: 'Abandoned',
    channel: undefined,
    ...overrides,
  });
}

// Every writer of ledger rows keeps the one rule: insert; over an existing row only a stand-in is
// replaced, and the images delivered and billed and their cost never go down.
for (const [backend, targetFor] of BACKENDS) {
  describe(`the ledger's one row rule on ${backend}`, () => {
    async function setUp(t: Parameters<typeof openNodes>[0]) {
      const nodes = await openNodes(t, targetFor, 1);
      if (nodes === undefined) return undefined;
      return nodes[0] as Database;
    }

    it('is the same through the request path and through a Kysely transaction', async (t) => {
      const database = await setUp(t);
      if (database === undefined) return;
      const writers: [string, (rows: UsageRow[]) => Promise<void>][] = [
        ['hot statements', (rows) => new SqlUsageStore(database).insert(rows)],
        [
          'Kysely',
          (rows) => database.db.transaction().execute((trx) => writeLedgerRowsIn(trx, rows)),
        ],
      ];
      for (const [name, write] of writers) {
        const partly = standIn(3, { imagesRequested: 4 });
        const final = usageRow(2, { status: 200 });
        await write([partly, final]);
        // The request's own row over its stand-in: replaced, but never fewer images or less cost.
        const ended = { ...partly, status: 503, errorCode: 'LeaseLost' as const, imagesBilled: 1 };
        ended.imagesDelivered = 1;
        ended.costMicros = 40_000;
        // A later write over a row of the request's own: kept as it is.
        const late = { ...final, status: 499, errorCode: 'CallerGone' as const, imagesBilled: 0 };
        await write([ended, late]);
        assert.deepEqual(
          await rowOf(database, partly.id),
          { ...ended, imagesDelivered: 3, imagesBilled: 3, costMicros: partly.costMicros },
          name,
        );
        assert.deepEqual(await rowOf(database, final.id), final, name);
        // A stand-in over a row of the request's own replaces nothing either.
        await write([{ ...final, status: STAND_IN_STATUS, imagesBilled: 9 }]);
        assert.deepEqual(await rowOf(database, final.id), final, name);
      }
    });

    it("keeps what a partly billed stand-in says when its request's reservation is reclaimed", async (t) => {
      const database = await setUp(t);
      if (database === undefined) return;
      const tokenId = await insertToken(database);
      await new SqlTokenLimitsStore(database.db).update(tokenId, { imageQuota: 10 });
      const quota = new SqlQuotaStore(database);
      const abandoned = standIn(0, { tokenId, imagesRequested: 4, imagesReceived: 0 });
      assert.equal(
        await quota.reserve({ id: 'r1', tokenId, images: 4, abandonedRow: abandoned }, 0, 1000),
        true,
      );
      const partly = { ...abandoned, imagesDelivered: 2, imagesBilled: 2, costMicros: 80_000 };
      assert.equal(
        await quota.billDelivered(
          tokenId,
          { reservationId: 'r1', idempotency: undefined, standInRow: partly },
          2,
        ),
        'billed',
      );
      assert.equal(await quota.reclaimExpired(1000), 2);
      const row = await rowOf(database, abandoned.id);
      assert.deepEqual(
        [row?.status, row?.imagesDelivered, row?.imagesBilled, row?.costMicros],
        [STAND_IN_STATUS, 2, 2, 80_000],
      );
      const found = await new SqlTokenLimitsStore(database.db).find(tokenId);
      assert.deepEqual([found?.imagesUsed, found?.imagesReserved], [2, 0]);
    });
  });
}
