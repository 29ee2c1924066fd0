import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { silentLog } from '../../src/support/log.js';
import { MemoryRateLimiter } from '../../src/admission/memory-rate-limiter.js';
import { type AdmissionServices, openAdmission } from '../../src/bootstrap/open-admission.js';
import type { Principal } from '../../src/domain/principal.js';
import { loadConfig } from '../../src/config/load-config.js';
import type { GatewayError } from '../../src/errors/gateway-error.js';
import { billedRow, rowLabelsFor } from '../helpers/row-labels.js';
import type { UsageRow } from '../../src/domain/usage-row.js';
import type { Database } from '../../src/store/database/database.js';
import { SqlQuotaStore } from '../../src/store/billing/quota-store.js';
import { SqlTokenLimitsStore } from '../../src/store/token-limits-store.js';
import { SqlUsageStore } from '../../src/store/usage-store.js';
import { validateRequest } from '../../src/validate/validate-request.js';
import { modelABody } from '../helpers/requests.js';
import { BACKENDS, insertToken, openNodes } from '../helpers/database-backends.js';

function ledgerRow(tokenId: string, images: number): UsageRow {
  return billedRow(tokenId, images);
}

/** Settles directly on the store as admission does, billing `row` when the fences hold. */
async function settle(
  quota: SqlQuotaStore,
  reservationId: string | undefined,
  tokenId: string,
  row: UsageRow,
  callerPresent = true,
) {
  const { outcome } = await quota.settle({
    tokenId,
    reservationId,
    claim: undefined,
    task: undefined,
    caller: { aborted: !callerPresent },
    alreadyBilled: 0,
    handedOver: false,
    row,
    imageCostMicros: 0,
  });
  return outcome;
}

/** A settlement of `images` delivered images, caller present. */
function delivered(images: number) {
  return {
    imagesReceived: images,
    imagesDelivered: images,
    width: 8,
    height: 8,
    result: () => '{}',
    callerPresent: () => true,
  };
}

async function standing(database: Database, tokenId: string) {
  const found = await new SqlTokenLimitsStore(database.db).find(tokenId);
  assert.ok(found);
  return { used: found.imagesUsed, reserved: found.imagesReserved };
}

for (const [backend, targetFor] of BACKENDS) {
  describe(`quota reservations on ${backend}`, () => {
    it('reserves, settles with what was produced, releases, and writes the ledger row with the settlement', async (t) => {
      const nodes = await openNodes(t, targetFor, 1);
      if (nodes === undefined) return;
      const [database] = nodes as [Database];
      const tokenId = await insertToken(database);
      await new SqlTokenLimitsStore(database.db).update(tokenId, { imageQuota: 10 });
      const quota = new SqlQuotaStore(database);

      assert.equal(await quota.reserve({ id: 'r1', tokenId, images: 4 }, 0, 60_000), true);
      assert.equal(await quota.reserve({ id: 'r2', tokenId, images: 4 }, 0, 60_000), true);
      assert.equal(await quota.reserve({ id: 'r3', tokenId, images: 3 }, 0, 60_000), false);
      assert.deepEqual(await standing(database, tokenId), { used: 0, reserved: 8 });

      const row = ledgerRow(tokenId, 2);
      assert.equal(await settle(quota, 'r1', tokenId, row), 'billed');
      assert.deepEqual(await standing(database, tokenId), { used: 2, reserved: 4 });
      await quota.release('r2', tokenId);
      await quota.release('r2', tokenId);
      assert.deepEqual(await standing(database, tokenId), { used: 2, reserved: 0 });
      assert.equal(await quota.reserve({ id: 'r4', tokenId, images: 8 }, 0, 60_000), true);
      assert.equal(await quota.reserve({ id: 'r5', tokenId, images: 1 }, 0, 60_000), false);

      const rows = await new SqlUsageStore(database).list({ tokenId }, 10);
      assert.deepEqual(
        rows.map((written) => [written.id, written.imagesBilled]),
        [[row.id, 2]],
      );
      // Writing the same row again (a retried settlement) records nothing new.
      await new SqlUsageStore(database).insert([row]);
      assert.equal((await new SqlUsageStore(database).list({ tokenId }, 10)).length, 1);
    });

    it('never spends more than the quota under concurrent reservations from several nodes', async (t) => {
      const nodes = await openNodes(t, targetFor, 3);
      if (nodes === undefined) return;
      const tokenId = await insertToken(nodes[0] as Database);
      await new SqlTokenLimitsStore((nodes[0] as Database).db).update(tokenId, { imageQuota: 25 });
      const stores = nodes.map((node) => new SqlQuotaStore(node));
      const attempts = Array.from({ length: 60 }, (_, index) => ({
        id: `c${index}`,
        images: (index % 3) + 1,
        store: stores[index % stores.length] as SqlQuotaStore,
      }));
      const outcomes = await Promise.all(
        attempts.map(async (attempt) => ({
          ...attempt,
          reserved: await attempt.store.reserve(
            { id: attempt.id, tokenId, images: attempt.images },
            0,
            60_000,
          ),
        })),
      );
      const won = outcomes.filter((outcome) => outcome.reserved);
      const held = won.reduce((sum, outcome) => sum + outcome.images, 0);
      assert.ok(held <= 25, `held ${held}`);
      assert.ok(
        held >= 23,
        `a reservation of up to 3 is refused only near the quota, held ${held}`,
      );
      assert.deepEqual(await standing(nodes[0] as Database, tokenId), { used: 0, reserved: held });

      // Settle concurrently too, each producing all it reserved.
      await Promise.all(
        won.map((outcome) =>
          settle(outcome.store, outcome.id, tokenId, ledgerRow(tokenId, outcome.images)),
        ),
      );
      assert.deepEqual(await standing(nodes[1] as Database, tokenId), { used: held, reserved: 0 });
      const totals = await new SqlUsageStore(nodes[2] as Database).summarize({ tokenId });
      assert.equal(totals[0]?.imagesBilled, held);
      assert.equal(totals[0]?.requests, won.length);
    });

    it('reclaims expired reservations of a dead node, once, and bills nothing for a late settlement', async (t) => {
      const nodes = await openNodes(t, targetFor, 2);
      if (nodes === undefined) return;
      const [first, second] = nodes as [Database, Database];
      const tokenId = await insertToken(first);
      await new SqlTokenLimitsStore(first.db).update(tokenId, { imageQuota: 6 });
      const quota = new SqlQuotaStore(first);
      const lostRow = { ...ledgerRow(tokenId, 0), status: 0, errorCode: 'Abandoned' as const };
      assert.equal(
        await quota.reserve({ id: 'dead-1', tokenId, images: 3, abandonedRow: lostRow }, 0, 1000),
        true,
      );
      assert.equal(await quota.reserve({ id: 'dead-2', tokenId, images: 2 }, 0, 5000), true);
      assert.equal(await quota.reclaimExpired(999), 0);
      const reclaimed = await Promise.all([
        quota.reclaimExpired(1000),
        new SqlQuotaStore(second).reclaimExpired(1000),
      ]);
      assert.deepEqual(
        reclaimed.sort(),
        [0, 3],
        'two nodes sweeping together free a reservation once',
      );
      assert.deepEqual(await standing(first, tokenId), { used: 0, reserved: 2 });
      const ledgerOf = () =>
        first.db
          .selectFrom('usage_ledger')
          .select(['id', 'status', 'error_code', 'images_received', 'images_billed'])
          .where('token_id', '=', tokenId)
          .execute();
      assert.deepEqual(
        (await ledgerOf()).map((row) => [row.id, Number(row.status), row.error_code]),
        [[lostRow.id, 0, 'Abandoned']],
        'the request lost with its node keeps one ledger row',
      );
      await quota.renew(['dead-2'], 10_000);
      assert.equal(await quota.reclaimExpired(9999), 0, 'a renewed reservation lives on');
      // The stalled node finally settles its reclaimed reservation: the lease is lost, so the
      // images it received are recorded as cost and nothing is billed or delivered.
      assert.equal(
        await settle(quota, 'dead-1', tokenId, { ...ledgerRow(tokenId, 3), id: lostRow.id }),
        'lease-lost',
      );
      assert.deepEqual(await standing(first, tokenId), { used: 0, reserved: 2 });
      assert.deepEqual(
        (await ledgerOf()).map((row) => [
          row.id,
          Number(row.status),
          row.error_code,
          Number(row.images_received),
          Number(row.images_billed),
        ]),
        [[lostRow.id, 503, 'LeaseLost', 3, 0]],
        'the late settlement replaces the abandoned row instead of adding a second one',
      );
    });

    it('admits again once a dead node’s reservation has expired (injected clock)', async (t) => {
      const nodes = await openNodes(t, targetFor, 1);
      if (nodes === undefined) return;
      const [database] = nodes as [Database];
      const tokenId = await insertToken(database);
      let now = 1_000_000;
      const config = loadConfig({
        IMAGEGATE_RESERVATION_TTL_MS: '30000',
        IMAGEGATE_TOKEN_CACHE_MS: '0',
      });
      const node = () =>
        openAdmission({
          config,
          database,
          now: () => now,
          log: silentLog,
          limiter: new MemoryRateLimiter(() => now),
        });
      const principal: Principal = { tokenId, account: 'acme', admin: false, issuer: 'gateway' };
      const request = validateRequest(modelABody({ n: 4 }));
      const admitOn = (admission: AdmissionServices) =>
        admission.admission.admit({
          principal,
          request,
          maxImages: 4,
          labels: rowLabelsFor(randomUUID(), tokenId),
        });
      const isQuotaRefusal = (error: GatewayError) => error.code === 'Throttling.AllocationQuota';

      const dying = await node();
      await dying.limits.update(tokenId, { imageQuota: 4 });
      await admitOn(dying); // neither settled nor released:
      await dying.close(); // its node dies and stops renewing.

      const live = await node();
      t.after(() => live.close());
      await assert.rejects(admitOn(live), isQuotaRefusal);
      now += 29_999;
      await assert.rejects(admitOn(live), isQuotaRefusal);
      now += 1;
      const ticket = await admitOn(live);
      await ticket.settle(delivered(4));
      assert.deepEqual(await standing(database, tokenId), { used: 4, reserved: 0 });
    });

    it('keeps the reservation of a request that outlives the TTL, as its node renews it', async (t) => {
      const nodes = await openNodes(t, targetFor, 1);
      if (nodes === undefined) return;
      const [database] = nodes as [Database];
      const tokenId = await insertToken(database);
      let now = 2_000_000;
      const node = await openAdmission({
        config: loadConfig({ IMAGEGATE_RESERVATION_TTL_MS: '3000', IMAGEGATE_TOKEN_CACHE_MS: '0' }),
        database,
        now: () => now,
        log: silentLog,
        limiter: new MemoryRateLimiter(() => now),
      });
      t.after(() => node.close());
      await node.limits.update(tokenId, { imageQuota: 2 });
      const principal: Principal = { tokenId, account: 'acme', admin: false, issuer: 'gateway' };
      const ticket = await node.admission.admit({
        principal,
        request: validateRequest(modelABody({ n: 2 })),
        maxImages: 2,
        labels: rowLabelsFor(randomUUID(), tokenId),
      });
      for (let beat = 0; beat < 5; beat++) {
        now += 1000;
        await node.admission.renewHeld();
      }
      await node.sweep();
      assert.deepEqual(await standing(database, tokenId), { used: 0, reserved: 2 }, 'still held');
      await ticket.settle(delivered(2));
      assert.deepEqual(await standing(database, tokenId), { used: 2, reserved: 0 });
    });
  });
}
