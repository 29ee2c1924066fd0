import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { MODEL_A, MODEL_B } from '../../src/domain/models.js';
import { GatewayError } from '../../src/errors/gateway-error.js';
import { type BillingGateway, gate, startBillingGateway } from '../helpers/billing-gateway.js';
import { GENERATION_URL, modelABody, modelBBody } from '../helpers/requests.js';
import { engineStarted } from '../helpers/engine-started.js';
import { temporaryDirectory } from '../helpers/temporary-directory.js';

async function open(t: TestContext, env: Record<string, string> = {}) {
  const gateway = await startBillingGateway({ env });
  t.after(() => gateway.close());
  return gateway;
}

function post(gateway: BillingGateway, authorization: string, body: object) {
  return gateway.app.inject({
    method: 'POST',
    url: GENERATION_URL,
    headers: { authorization, 'content-type': 'application/json' },
    payload: body,
  });
}

async function standing(gateway: BillingGateway, tokenId: string) {
  const found = await gateway.admission.limits.find(tokenId);
  assert.ok(found);
  return { used: found.imagesUsed, reserved: found.imagesReserved };
}

describe('admission over HTTP', () => {
  it('refuses a model the token may not use with 401 InvalidApiKey, before any engine', async (t) => {
    const gateway = await open(t);
    const { authorization } = await gateway.token({ limits: { allowedModels: [MODEL_B] } });
    const refused = await post(gateway, authorization, modelABody());
    assert.equal(refused.statusCode, 401);
    assert.equal(refused.json().code, 'InvalidApiKey');
    assert.match(refused.json().message, new RegExp(`may not use model ${MODEL_A}`));
    assert.equal(gateway.engine.calls, 0);
    assert.equal((await post(gateway, authorization, modelBBody())).statusCode, 200);
  });

  it('answers over the per-minute rate with 429 Throttling.RateQuota, Retry-After and RateLimit-* headers', async (t) => {
    const gateway = await open(t);
    const { authorization } = await gateway.token({ limits: { requestsPerMinute: 3 } });
    const allowed = [];
    for (let i = 0; i < 3; i++) allowed.push(await post(gateway, authorization, modelABody()));
    assert.deepEqual(
      allowed.map((response) => response.statusCode),
      [200, 200, 200],
    );
    assert.equal(allowed[0]?.headers['ratelimit-limit'], '3');
    assert.equal(allowed[0]?.headers['ratelimit-remaining'], '2');
    assert.equal(allowed[2]?.headers['ratelimit-remaining'], '0');
    const refused = await post(gateway, authorization, modelABody());
    assert.equal(refused.statusCode, 429);
    assert.equal(refused.json().code, 'Throttling.RateQuota');
    assert.match(refused.json().message, /3 requests per minute/);
    assert.equal(refused.headers['ratelimit-limit'], '3');
    assert.equal(refused.headers['ratelimit-remaining'], '0');
    // GCRA: one request's worth (20 s) comes back first; the whole limit after a minute.
    assert.equal(refused.headers['retry-after'], '20');
    assert.equal(refused.headers['ratelimit-reset'], '60');
    assert.equal(gateway.engine.calls, 3);
  });

  it('holds a concurrency slot per running request and releases it on success and failure', async (t) => {
    const gateway = await open(t);
    const { authorization } = await gateway.token({ limits: { maxConcurrent: 1 } });
    const held = gate();
    gateway.engine.gate = held.promise;
    const firstRunning = engineStarted(t, gateway.engine);
    const first = post(gateway, authorization, modelABody());
    await firstRunning;
    const second = await post(gateway, authorization, modelABody());
    assert.equal(second.statusCode, 429);
    assert.equal(second.json().code, 'Throttling.RateQuota');
    assert.match(second.json().message, /1 concurrent requests/);
    assert.equal(second.headers['retry-after'], '1');
    held.open();
    assert.equal((await first).statusCode, 200);
    gateway.engine.gate = undefined;
    gateway.engine.failure = new GatewayError('UpstreamError', 'upstream broke');
    assert.equal((await post(gateway, authorization, modelABody())).statusCode, 502);
    gateway.engine.failure = undefined;
    assert.equal((await post(gateway, authorization, modelABody())).statusCode, 200);
  });

  it('reserves n, bills what was produced, releases the rest, and refuses with 429 Throttling.AllocationQuota before the engine', async (t) => {
    const gateway = await open(t);
    const { id, authorization } = await gateway.token({ limits: { imageQuota: 5 } });
    gateway.engine.imagesPerCall = 1;
    const response = await post(gateway, authorization, modelABody({ n: 4 }));
    assert.equal(response.statusCode, 200);
    assert.equal(response.json().usage.image_count, 1);
    assert.deepEqual(await standing(gateway, id), { used: 1, reserved: 0 });

    const tooMany = await post(
      gateway,
      authorization,
      modelABody({ n: 3, enable_sequential: true, size: '1K' }),
    );
    assert.equal(tooMany.statusCode, 200, 'sequential n=3 fits in the 4 left');
    assert.deepEqual(await standing(gateway, id), { used: 2, reserved: 0 });

    const calls = gateway.engine.calls;
    // Sequential without n may produce 12: more than the 3 left.
    const refused = await post(
      gateway,
      authorization,
      modelABody({ enable_sequential: true, size: '1K' }),
    );
    assert.equal(refused.statusCode, 429);
    assert.equal(refused.json().code, 'Throttling.AllocationQuota');
    assert.match(refused.json().message, /12 images/);
    assert.equal(gateway.engine.calls, calls, 'no engine was called');

    gateway.engine.failure = new GatewayError('ModelUnavailable', 'all down');
    assert.equal((await post(gateway, authorization, modelABody({ n: 3 }))).statusCode, 503);
    assert.deepEqual(await standing(gateway, id), { used: 2, reserved: 0 }, 'failure released');
  });

  it('records one ledger row per authenticated request, success and failure alike, flushed on close', async (t) => {
    const dataDir = await temporaryDirectory('imagegate-ledger-');
    const gateway = await startBillingGateway({
      dataDir,
      env: { IMAGEGATE_IMAGE_PRICES: `${MODEL_A}=0.04,${MODEL_B}=0.025` },
    });
    let closed = false;
    t.after(() => (closed ? undefined : gateway.close()));
    const { id, authorization } = await gateway.token({
      account: 'ledger-co',
      limits: { allowedModels: [MODEL_A], imageQuota: 100 },
    });
    const ok = await post(gateway, authorization, modelABody({ n: 2, size: '1024*1024' }));
    const invalid = await post(gateway, authorization, modelABody({ n: 9 }));
    const forbidden = await post(gateway, authorization, modelBBody());
    gateway.engine.failure = new GatewayError('UpstreamError', 'bad gateway');
    const failed = await post(gateway, authorization, modelABody());
    const anonymous = await gateway.app.inject({
      method: 'POST',
      url: GENERATION_URL,
      payload: {},
    });
    assert.deepEqual(
      [ok, invalid, forbidden, failed, anonymous].map((response) => response.statusCode),
      [200, 400, 401, 502, 401],
    );
    assert.equal(gateway.admission.ledger.pending, 3, 'unbilled rows wait for the batch');

    const usage = gateway.admission.usage;
    const beforeClose = await usage.list({ tokenId: id }, 100);
    assert.equal(beforeClose.length, 1, 'the billed row was written with its settlement');
    await gateway.close();
    closed = true;

    const reopened = await startBillingGateway({ dataDir });
    t.after(() => reopened.close());
    const rows = await reopened.admission.usage.list({ tokenId: id }, 100);
    assert.equal(rows.length, 4, 'the unauthenticated request has no row');
    const byRequest = new Map(rows.map((row) => [row.requestId, row]));
    const billed = byRequest.get(ok.json().request_id);
    assert.ok(billed);
    assert.equal(billed.account, 'ledger-co');
    assert.equal(billed.model, MODEL_A);
    assert.equal(billed.mode, 'text-to-image');
    assert.equal(billed.channel, 'fake-channel');
    assert.equal(billed.status, 200);
    assert.equal(billed.imagesRequested, 2);
    assert.equal(billed.imagesReceived, 2);
    assert.equal(billed.imagesDelivered, 2);
    assert.equal(billed.imagesBilled, 2);
    assert.equal(billed.outputSize, '1024*1024');
    assert.equal(billed.costMicros, 80_000);
    assert.equal(billed.upstreamMs, 7);
    assert.ok(billed.gatewayMs >= 0);
    const codes = [invalid, forbidden, failed].map((response) => {
      const row = byRequest.get(response.json().request_id);
      assert.ok(row, response.body);
      assert.equal(row.imagesBilled, 0);
      assert.equal(row.imagesDelivered, 0);
      assert.equal(row.costMicros, 0);
      return [row.status, row.errorCode, row.model ?? null];
    });
    assert.deepEqual(codes, [
      [400, 'InvalidParameter', MODEL_A],
      [401, 'InvalidApiKey', MODEL_B],
      [502, 'UpstreamError', MODEL_A],
    ]);
  });
});
