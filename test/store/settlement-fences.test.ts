import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import type { UsageRow } from '../../src/domain/usage-row.js';
import { RequestAccount } from '../../src/ledger/request-account.js';
import type { Database } from '../../src/store/database/database.js';
import { SqlIdempotencyStore } from '../../src/store/idempotency-store.js';
import {
  type SettlementFence,
  type SettlementOutcome,
  SqlQuotaStore,
} from '../../src/store/billing/quota-store.js';
import { SqlTokenLimitsStore } from '../../src/store/token-limits-store.js';
import { SqlUsageStore } from '../../src/store/usage-store.js';
import { BACKENDS, insertToken, openNodes } from '../helpers/database-backends.js';

/** The row admission builds for each outcome: billed images only when billed. */
function rowFor(tokenId: string, rowId: string, delivered: number) {
  return (outcome: SettlementOutcome): UsageRow => {
    const account = new RequestAccount(randomUUID(), Date.now());
    account.imagesReceived = delivered + 1;
    account.imagesDelivered = outcome === 'billed' ? delivered : 0;
    account.imagesBilled = account.imagesDelivered;
    account.errorCode =
      outcome === 'billed' ? undefined : outcome === 'lease-lost' ? 'LeaseLost' : 'CallerGone';
    return {
      ...account.toRow(
        { tokenId, account: 'acme' },
        { status: outcome === 'billed' ? 200 : 503, costMicros: 0, endedAt: Date.now() },
      ),
      id: rowId,
    };
  };
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
      const fence: SettlementFence = {
        reservationId: 'r1',
        idempotency: undefined,
        callerPresent: () => true,
      };
      const rowId = randomUUID();
      assert.equal(await quota.settle(tokenId, fence, rowFor(tokenId, rowId, 3)), 'billed');
      assert.deepEqual(await standing(first, tokenId), { used: 3, reserved: 0 });
      const row = await rowOf(first, rowId);
      assert.deepEqual(
        [row?.status, row?.imagesReceived, row?.imagesDelivered, row?.imagesBilled],
        [200, 4, 3, 3],
      );
      assert.equal(await quota.isBilled(rowId), true);
      assert.equal(await quota.isBilled(randomUUID()), false);
    });

    it('bills nothing when the caller left before the commit, and frees the reservation', async (t) => {
      const set = await setUp(t);
      if (set === undefined) return;
      const { first, tokenId, quota } = set;
      assert.equal(await quota.reserve({ id: 'r1', tokenId, images: 2 }, 0, 60_000), true);
      const rowId = randomUUID();
      const outcome = await quota.settle(
        tokenId,
        { reservationId: 'r1', idempotency: undefined, callerPresent: () => false },
        rowFor(tokenId, rowId, 2),
      );
      assert.equal(outcome, 'caller-gone');
      assert.deepEqual(await standing(first, tokenId), { used: 0, reserved: 0 });
      const row = await rowOf(first, rowId);
      assert.deepEqual([row?.imagesReceived, row?.imagesBilled], [3, 0]);
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
      const outcome = await quota.settle(
        tokenId,
        { reservationId: 'stalled', idempotency: undefined, callerPresent: () => true },
        rowFor(tokenId, rowId, 4),
      );
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
        quota.settle(
          tokenId,
          {
            reservationId: undefined,
            idempotency: {
              scope: tokenId,
              key: 'key-1',
              owner,
              requestId: owner,
              result: JSON.stringify({ by: owner }),
            },
            callerPresent: () => true,
          },
          rowFor(tokenId, rowId, 1),
        );
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
      const outcome = await quota.settle(
        tokenId,
        {
          reservationId: undefined,
          idempotency: { scope: tokenId, key: 'key-2', owner: 'me', requestId: 'me', result: '{}' },
          callerPresent: () => false,
        },
        rowFor(tokenId, randomUUID(), 1),
      );
      assert.equal(outcome, 'caller-gone');
      assert.equal(await keys.find(tokenId, 'key-2'), undefined);
    });
  });
}
