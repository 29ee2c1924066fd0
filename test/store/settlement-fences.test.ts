import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import type { Database } from '../../src/store/database/database.js';
import { SqlIdempotencyStore } from '../../src/store/idempotency-store.js';
import { SqlQuotaStore } from '../../src/store/billing/quota-store.js';
import { SqlTokenLimitsStore } from '../../src/store/token-limits-store.js';
import { MODEL_A } from '../../src/domain/models.js';
import { createTaskStore } from '../../src/store/task-store.js';
import { SqlUsageStore } from '../../src/store/usage-store.js';
import { BACKENDS, insertToken, openNodes } from '../helpers/database-backends.js';
import { settlementPlan } from '../helpers/settlement-plans.js';

/** The outcome of settling `delivered` images (one more received) by their plan. */
async function settle(
  quota: SqlQuotaStore,
  tokenId: string,
  rowId: string,
  delivered: number,
  options: Parameters<typeof settlementPlan>[1] = {},
) {
  const plan = settlementPlan(tokenId, { rowId, delivered, received: delivered + 1, ...options });
  return (await quota.settle(plan)).outcome;
}

async function standing(database: Database, tokenId: string) {
  const found = await new SqlTokenLimitsStore(database.db).find(tokenId);
  assert.ok(found);
  return { used: found.imagesUsed, reserved: found.imagesReserved };
}

async function rowOf(database: Database, rowId: string) {
  const rows = await new SqlUsageStore(database).list({}, 1000);
  return rows.find((row) => row.id === rowId);
}

for (const [backend, targetFor] of BACKENDS) {
  describe(`settlement fences on ${backend}`, () => {
    async function setUp(t: Parameters<typeof openNodes>[0], quota = 10) {
      const nodes = await openNodes(t, targetFor, 2);
      if (nodes === undefined) return undefined;
      const [first, second] = nodes as [Database, Database];
      const tokenId = await insertToken(first);
      await new SqlTokenLimitsStore(first.db).update(tokenId, { imageQuota: quota });
      return { first, second, tokenId, quota: new SqlQuotaStore(first) };
    }

    it('bills what was delivered while the reservation is held, and says so', async (t) => {
      const set = await setUp(t);
      if (set === undefined) return;
      const { first, tokenId, quota } = set;
      assert.equal(await quota.reserve({ id: 'r1', tokenId, images: 4 }, 0, 60_000), true);
      const rowId = randomUUID();
      const plan = settlementPlan(tokenId, {
        reservationId: 'r1',
        rowId,
        delivered: 3,
        received: 4,
      });
      const settled = await quota.settle(plan);
      assert.equal(settled.outcome, 'billed');
      assert.deepEqual(await standing(first, tokenId), { used: 3, reserved: 0 });
      const row = await rowOf(first, rowId);
      assert.deepEqual(
        [row?.status, row?.imagesReceived, row?.imagesDelivered, row?.imagesBilled],
        [200, 4, 3, 3],
      );
      assert.deepEqual(row, { ...settled.row, gatewayMs: Math.round(settled.row.gatewayMs) });
      assert.equal(await quota.isBilled(rowId), true);
      assert.equal(await quota.isBilled(randomUUID()), false);
    });

    it('bills nothing when the caller left before the commit, and frees the reservation', async (t) => {
      const set = await setUp(t);
      if (set === undefined) return;
      const { first, tokenId, quota } = set;
      assert.equal(await quota.reserve({ id: 'r1', tokenId, images: 2 }, 0, 60_000), true);
      const rowId = randomUUID();
      const outcome = await settle(quota, tokenId, rowId, 2, {
        reservationId: 'r1',
        present: false,
      });
      assert.equal(outcome, 'caller-gone');
      assert.deepEqual(await standing(first, tokenId), { used: 0, reserved: 0 });
      const row = await rowOf(first, rowId);
      assert.deepEqual(
        [row?.status, row?.errorCode, row?.imagesReceived, row?.imagesBilled],
        [499, 'CallerGone', 3, 0],
      );
    });

    it('bills nothing under a reservation that lapsed and was reclaimed by another node', async (t) => {
      const set = await setUp(t, 4);
      if (set === undefined) return;
      const { first, second, tokenId, quota } = set;
      assert.equal(await quota.reserve({ id: 'stalled', tokenId, images: 4 }, 0, 1000), true);
      assert.equal(await new SqlQuotaStore(second).reclaimExpired(1000), 4);
      // Meanwhile the freed quota is spent by someone else.
      assert.equal(await quota.reserve({ id: 'other', tokenId, images: 4 }, 1000, 60_000), true);
      const rowId = randomUUID();
      const outcome = await settle(quota, tokenId, rowId, 4, { reservationId: 'stalled' });
      assert.equal(outcome, 'lease-lost');
      assert.deepEqual(
        await standing(first, tokenId),
        { used: 0, reserved: 4 },
        'the quota is never exceeded: the stalled node billed nothing',
      );
      assert.equal((await rowOf(first, rowId))?.imagesBilled, 0);
    });

    it('publishes the result under its key only while the claim is its own', async (t) => {
      const set = await setUp(t);
      if (set === undefined) return;
      const { first, second, tokenId, quota } = set;
      const keys = new SqlIdempotencyStore(first);
      const claim = (owner: string) => ({
        scope: tokenId,
        key: 'key-1',
        fingerprint: 'f',
        owner,
        requestId: owner,
        now: 0,
        leaseUntil: 1000,
        expiresAt: 86_400_000,
      });
      assert.equal(await keys.claim(claim('node-a')), true);
      // Node A stalls; its lease lapses and node B takes the key over.
      assert.equal(
        await new SqlIdempotencyStore(second).takeOver(
          tokenId,
          'key-1',
          'node-b',
          'rb',
          1000,
          9000,
        ),
        true,
      );
      const settleAs = (owner: string, rowId: string) =>
        settle(quota, tokenId, rowId, 1, {
          claim: {
            scope: tokenId,
            key: 'key-1',
            owner,
            requestId: owner,
            result: JSON.stringify({ by: owner }),
          },
        });
      const rowA = randomUUID();
      const rowB = randomUUID();
      assert.equal(await settleAs('node-b', rowB), 'billed');
      assert.equal(await settleAs('node-a', rowA), 'lease-lost');
      assert.deepEqual(await standing(first, tokenId), { used: 1, reserved: 0 }, 'billed once');
      const record = await keys.find(tokenId, 'key-1');
      assert.deepEqual(record?.outcome, {
        kind: 'result',
        result: JSON.stringify({ by: 'node-b' }),
        requestId: 'node-b',
      });
      assert.equal((await rowOf(first, rowA))?.imagesBilled, 0);
    });

    it('forgets a key whose request billed nothing, so that a repeat runs again', async (t) => {
      const set = await setUp(t);
      if (set === undefined) return;
      const { first, tokenId, quota } = set;
      const keys = new SqlIdempotencyStore(first);
      await keys.claim({
        scope: tokenId,
        key: 'key-2',
        fingerprint: 'f',
        owner: 'me',
        requestId: 'me',
        now: 0,
        leaseUntil: 60_000,
        expiresAt: 86_400_000,
      });
      const outcome = await settle(quota, tokenId, randomUUID(), 1, {
        present: false,
        claim: { scope: tokenId, key: 'key-2', owner: 'me', requestId: 'me', result: '{}' },
      });
      assert.equal(outcome, 'caller-gone');
      assert.equal(await keys.find(tokenId, 'key-2'), undefined);
    });
  });
}

for (const [backend, targetFor] of BACKENDS) {
  describe(`settlement of asynchronous tasks on ${backend}`, () => {
    it("ends a task still this node's SUCCEEDED with its bill, and bills nothing and writes no row for one ended elsewhere, in one group's transaction", async (t) => {
      const nodes = await openNodes(t, targetFor, 1);
      if (nodes === undefined) return;
      const [database] = nodes as [Database];
      const tokenId = await insertToken(database);
      await new SqlTokenLimitsStore(database.db).update(tokenId, { imageQuota: 10 });
      let transactions = 0;
      const quota = new SqlQuotaStore({
        db: database.db,
        statements: {
          dialect: database.statements.dialect,
          rows: (statement, parameters) => database.statements.rows(statement, parameters),
          run: (statement, parameters) => database.statements.run(statement, parameters),
          transaction: (work) => {
            transactions += 1;
            return database.statements.transaction(work);
          },
        },
      });
      const tasks = createTaskStore(database.kind, database.db);
      const submit = async (id: string) => {
        const task = {
          id,
          requestId: `request-${id}`,
          ledgerRowId: randomUUID(),
          owner: 'acme',
          tokenId,
          account: 'acme',
          issuer: 'gateway' as const,
          model: MODEL_A,
          request: '{}',
          workspace: undefined,
          resolveUploads: false,
          reservationId: id,
          submittedAt: 0,
          expiresAt: 86_400_000,
        };
        assert.equal(await quota.reserve({ id, tokenId, images: 2 }, 0, 60_000), true);
        assert.equal(await tasks.insert(task, undefined, { total: 10, perOwner: 10 }, 0), 'stored');
        assert.equal(await tasks.handOver(id), true);
        assert.equal((await tasks.claim('me', 0, 60_000))?.id, id);
        return task;
      };
      const kept = await submit('kept');
      const lost = await submit('lost');
      // Another node found the second task's lease lapsed and ended it, with its own row.
      const failedRow = settlementPlan(tokenId, { rowId: lost.ledgerRowId, delivered: 0 }).row;
      failedRow.status = 503;
      failedRow.errorCode = 'Overloaded';
      const end = { state: 'FAILED' as const, errorCode: 'X', errorMessage: 'x', endedAt: 1 };
      assert.equal(
        await tasks.end(
          'lost',
          { state: 'RUNNING', runner: 'me' },
          { ...end, expiresAt: 9 },
          failedRow,
        ),
        true,
      );
      const completion = (id: string) => ({
        id,
        runner: 'me',
        result: JSON.stringify({ id }),
        endedAt: 5,
        expiresAt: 50,
      });
      const before = transactions;
      const [keptSettled, lostSettled] = await Promise.all(
        [kept, lost].map((task) =>
          quota.settle(
            settlementPlan(tokenId, {
              reservationId: task.id,
              rowId: task.ledgerRowId,
              delivered: 2,
              task: completion(task.id),
            }),
          ),
        ),
      );
      assert.equal(transactions - before, 1, 'both tasks settled in one transaction');
      assert.equal(keptSettled?.outcome, 'billed');
      assert.equal(lostSettled?.outcome, 'lease-lost');
      assert.deepEqual(
        [lostSettled?.row.status, lostSettled?.row.errorCode, lostSettled?.row.imagesBilled],
        [503, 'LeaseLost', 0],
        'the row that describes the outcome',
      );
      const ended = await tasks.find('kept');
      assert.deepEqual(
        [ended?.state, ended?.result, ended?.endedAt],
        ['SUCCEEDED', JSON.stringify({ id: 'kept' }), 5],
      );
      assert.equal((await tasks.find('lost'))?.state, 'FAILED');
      assert.deepEqual(await standing(database, tokenId), { used: 2, reserved: 0 });
      assert.deepEqual(
        [
          (await rowOf(database, kept.ledgerRowId))?.status,
          (await rowOf(database, kept.ledgerRowId))?.imagesBilled,
        ],
        [200, 2],
      );
      assert.deepEqual(
        await rowOf(database, lost.ledgerRowId),
        failedRow,
        "the ending's row is left as it is",
      );
    });
  });
}
