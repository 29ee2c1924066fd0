import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { GatewayError } from '../../src/errors/gateway-error.js';
import { fingerprintOf } from '../../src/idempotency/fingerprint.js';
import { type IdempotencyRecord, SqlIdempotencyStore } from '../../src/store/idempotency-store.js';
import {
  type BillingGatewayOptions,
  gate,
  postGeneration as post,
  startBillingGateway,
} from '../helpers/billing-gateway.js';
import { postgresTarget } from '../helpers/postgres.js';
import { modelABody } from '../helpers/requests.js';
import { engineStarted } from '../helpers/engine-started.js';

async function open(t: TestContext, options: BillingGatewayOptions = {}) {
  const gateway = await startBillingGateway(options);
  t.after(() => gateway.close());
  return gateway;
}

/** The longest pause a waiting repeat takes between two looks at its key. */
const LONGEST_POLL_PAUSE_MS = 1_000;

/** Lets pending promise callbacks run; setImmediate stays real under the mock timers. */
function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Runs `steps` with setTimeout on a clock only the test moves, so a waiting repeat looks at its key
 * again exactly when told. Real timers are back before teardown, whose closing relies on them.
 */
async function withMockedTimeouts<T>(t: TestContext, steps: () => Promise<T>): Promise<T> {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  try {
    return await steps();
  } finally {
    t.mock.timers.reset();
  }
}

/**
 * Counts the looks a repeat takes at its key while the first request with it is still running;
 * `seen(n)` resolves at the n-th. Each look is followed by a pause on the (mocked) clock.
 */
function watchRepeatsWaiting(t: TestContext): { seen(looks: number): Promise<void> } {
  const find = SqlIdempotencyStore.prototype.find;
  let looks = 0;
  const waiting: { looks: number; open(): void }[] = [];
  t.mock.method(
    SqlIdempotencyStore.prototype,
    'find',
    async function (
      this: SqlIdempotencyStore,
      scope: string,
      key: string,
    ): Promise<IdempotencyRecord | undefined> {
      const record = await find.call(this, scope, key);
      if (record !== undefined && record.outcome === undefined) {
        looks++;
        for (const waiter of waiting) if (waiter.looks <= looks) waiter.open();
      }
      return record;
    },
  );
  return {
    seen: (wanted) => {
      const reached = gate();
      if (looks >= wanted) reached.open();
      else waiting.push({ looks: wanted, open: reached.open });
      return reached.promise;
    },
  };
}

describe('Idempotency-Key', () => {
  it('replays the first response for a repeat of the same body, without generating or billing again', async (t) => {
    const gateway = await open(t);
    const { id, authorization } = await gateway.token({ limits: { imageQuota: 10 } });
    const body = modelABody({ n: 2, seed: 7 });
    const first = await post(gateway, authorization, body, 'order-1');
    assert.equal(first.statusCode, 200);
    // The same body serialised differently is still the same body.
    const reordered = `{ "parameters": {"seed": 7, "n": 2},\n "input": ${JSON.stringify(body.input)}, "model": "${body.model}" }`;
    const repeat = await post(gateway, authorization, reordered, 'order-1');
    assert.equal(repeat.statusCode, 200);
    assert.equal(repeat.body, first.body, 'same image URLs, same request_id');
    assert.equal(repeat.headers['idempotent-replayed'], 'true');
    assert.equal(repeat.headers['content-type'], first.headers['content-type']);
    assert.notEqual(repeat.headers['x-request-id'], first.headers['x-request-id']);
    assert.equal(gateway.engine.calls, 1);
    assert.equal((await gateway.admission.limits.find(id))?.imagesUsed, 2, 'billed once');

    await gateway.admission.ledger.flush();
    const rows = await gateway.admission.usage.list({ tokenId: id }, 10);
    assert.deepEqual(
      rows.map((row) => [row.status, row.imagesBilled, row.replayed, row.model]),
      [
        [200, 2, false, body.model],
        [200, 0, true, body.model],
      ],
    );
  });

  it('answers the same key with a different body with 400 InvalidParameter naming the header', async (t) => {
    const gateway = await open(t);
    const { authorization } = await gateway.token();
    assert.equal((await post(gateway, authorization, modelABody({ n: 1 }), 'k')).statusCode, 200);
    const conflict = await post(gateway, authorization, modelABody({ n: 2 }), 'k');
    assert.equal(conflict.statusCode, 400);
    assert.equal(conflict.json().code, 'InvalidParameter');
    assert.match(
      conflict.json().message,
      /^Idempotency-Key: was already used with a different request body/,
    );
    const malformed = await post(gateway, authorization, modelABody(), 'x'.repeat(256));
    assert.equal(malformed.statusCode, 400);
    assert.match(malformed.json().message, /^Idempotency-Key: must be/);
    assert.equal(gateway.engine.calls, 1);
  });

  it('makes a repeat wait while the first is still running, then replays it', async (t) => {
    const gateway = await open(t);
    const { authorization } = await gateway.token();
    const held = gate();
    gateway.engine.gate = held.promise;
    const firstRunning = engineStarted(t, gateway.engine);
    const repeatWaiting = watchRepeatsWaiting(t);
    const [firstResponse, repeatResponse] = await withMockedTimeouts(t, async () => {
      const first = post(gateway, authorization, modelABody(), 'slow');
      await firstRunning;
      let repeatDone = false;
      const repeat = post(gateway, authorization, modelABody(), 'slow').then((response) => {
        repeatDone = true;
        return response;
      });
      await repeatWaiting.seen(1);
      await settle();
      t.mock.timers.tick(LONGEST_POLL_PAUSE_MS);
      await repeatWaiting.seen(2);
      assert.equal(repeatDone, false, 'the repeat waits for the first');
      held.open();
      await first;
      await settle();
      t.mock.timers.tick(LONGEST_POLL_PAUSE_MS);
      return Promise.all([first, repeat]);
    });
    assert.equal(firstResponse.statusCode, 200);
    assert.equal(repeatResponse.body, firstResponse.body);
    assert.equal(gateway.engine.calls, 1);
  });

  it('forgets the key when the first request fails, so a retry runs again', async (t) => {
    const gateway = await open(t);
    const { authorization } = await gateway.token();
    gateway.engine.failure = new GatewayError('UpstreamError', 'upstream broke');
    assert.equal((await post(gateway, authorization, modelABody(), 'retry-me')).statusCode, 502);
    gateway.engine.failure = undefined;
    const retry = await post(gateway, authorization, modelABody(), 'retry-me');
    assert.equal(retry.statusCode, 200);
    assert.equal(retry.headers['idempotent-replayed'], undefined);
    assert.equal(gateway.engine.calls, 2);
  });

  it('keeps keys apart per token', async (t) => {
    const gateway = await open(t);
    const first = await gateway.token();
    const second = await gateway.token();
    const a = await post(gateway, first.authorization, modelABody(), 'shared');
    const b = await post(gateway, second.authorization, modelABody(), 'shared');
    assert.notEqual(a.body, b.body);
    assert.equal(gateway.engine.calls, 2);
  });

  it('takes over a key whose first request died with its node, once the claim lapses', async (t) => {
    const gateway = await open(t);
    const { id, authorization } = await gateway.token();
    const body = modelABody();
    await new SqlIdempotencyStore(gateway.services.database).claim({
      scope: id,
      key: 'orphan',
      fingerprint: fingerprintOf(body),
      owner: 'dead-node/claim',
      requestId: 'dead-request',
      now: Date.now() - 120_000,
      leaseUntil: Date.now() - 60_000,
      expiresAt: Date.now() + 3_600_000,
    });
    const response = await post(gateway, authorization, body, 'orphan');
    assert.equal(response.statusCode, 200);
    assert.equal(gateway.engine.calls, 1);
  });

  it('replays a whole response stored by an earlier version byte for byte, without generating', async (t) => {
    const gateway = await open(t);
    const { id, authorization } = await gateway.token();
    const body = modelABody();
    await new SqlIdempotencyStore(gateway.services.database).claim({
      scope: id,
      key: 'stored-whole',
      fingerprint: fingerprintOf(body),
      owner: 'old-node/claim',
      requestId: 'old-request',
      now: Date.now(),
      leaseUntil: Date.now() + 60_000,
      expiresAt: Date.now() + 3_600_000,
    });
    const stored = '{"output":{"stored":"by an earlier version"},"request_id":"old-request"}';
    await gateway.services.database.db
      .updateTable('idempotency_keys')
      .set({
        state: 'done',
        status: 200,
        response_body: stored,
        response_headers: JSON.stringify({ 'content-type': 'application/json; charset=utf-8' }),
      })
      .where('idempotency_key', '=', 'stored-whole')
      .execute();
    const response = await post(gateway, authorization, body, 'stored-whole');
    assert.equal(response.statusCode, 200);
    assert.equal(response.body, stored);
    assert.equal(response.headers['idempotent-replayed'], 'true');
    assert.equal(gateway.engine.calls, 0);
  });

  it('makes a repeat on another node wait for the first and replay it (PostgreSQL)', async (t) => {
    const database = await postgresTarget(t);
    if (database === undefined) return;
    const nodeA = await open(t, { database });
    const nodeB = await open(t, { database, dataDir: nodeA.services.config.dataDir });
    const { authorization } = await nodeA.token();
    const held = gate();
    nodeA.engine.gate = held.promise;
    const firstRunning = engineStarted(t, nodeA.engine);
    const repeatWaiting = watchRepeatsWaiting(t);
    const [firstResponse, repeatResponse] = await withMockedTimeouts(t, async () => {
      const first = post(nodeA, authorization, modelABody({ n: 3 }), 'cross-node');
      await firstRunning;
      const repeat = post(nodeB, authorization, modelABody({ n: 3 }), 'cross-node');
      await repeatWaiting.seen(1);
      held.open();
      await first;
      await settle();
      t.mock.timers.tick(LONGEST_POLL_PAUSE_MS);
      return Promise.all([first, repeat]);
    });
    assert.equal(firstResponse.statusCode, 200);
    assert.equal(repeatResponse.body, firstResponse.body);
    assert.equal(nodeA.engine.calls + nodeB.engine.calls, 1);
  });
});
