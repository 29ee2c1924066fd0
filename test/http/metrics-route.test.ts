import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MODEL_A } from '../../src/domain/models.js';
import { parseSamples, samplesOf } from '../metrics/prometheus-text.js';
import { GENERATION_URL, modelABody } from '../helpers/requests.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

/** `name;dur=1.5, ...` as name -> milliseconds; fails on anything else. */
function parseServerTiming(header: unknown): Record<string, number> {
  assert.equal(typeof header, 'string');
  const entries: Record<string, number> = {};
  for (const entry of (header as string).split(', ')) {
    const match = /^([a-z]+);dur=(\d+(?:\.\d+)?)$/.exec(entry);
    assert.ok(match !== null, `not a Server-Timing entry: ${entry}`);
    entries[match[1] as string] = Number(match[2]);
  }
  return entries;
}

describe('GET /metrics after some requests', () => {
  let gateway: TestGateway;
  let admin: string;
  let user: string;

  before(async () => {
    // Rows of unbilled requests stay queued, so the ledger queue's depth is known.
    gateway = await startTestGateway({ env: { IMAGEGATE_LEDGER_FLUSH_MS: '60000' } });
    admin = await gateway.bearer({ admin: true });
    user = await gateway.bearer();
  });
  after(() => gateway.close());

  const generate = (body: object, authorization?: string) =>
    gateway.app.inject({
      method: 'POST',
      url: GENERATION_URL,
      headers: authorization === undefined ? {} : { authorization },
      payload: body,
    });

  it('counts every request exactly, says where generation time went, and needs an admin token', async () => {
    const generated = await generate(modelABody({ n: 2, size: '1K' }), user);
    assert.equal(generated.statusCode, 200, generated.body);
    const timing = parseServerTiming(generated.headers['server-timing']);
    // The local engine's job waits for its turn in the gateway's queue: part of the gateway's time.
    assert.deepEqual(Object.keys(timing), ['gateway', 'queue', 'upstream', 'storage']);
    assert.ok((timing.queue as number) <= (timing.gateway as number), JSON.stringify(timing));

    const refused = await generate(modelABody({ n: 7 }), user);
    assert.equal(refused.statusCode, 400);
    assert.deepEqual(Object.keys(parseServerTiming(refused.headers['server-timing'])), ['gateway']);
    const anonymous = await generate(modelABody());
    assert.equal(anonymous.statusCode, 401);
    assert.deepEqual(Object.keys(parseServerTiming(anonymous.headers['server-timing'])), [
      'gateway',
    ]);

    for (const authorization of [undefined, user]) {
      const response = await gateway.app.inject({
        url: '/metrics',
        headers: authorization === undefined ? {} : { authorization },
      });
      assert.equal(response.statusCode, 401);
      assert.equal(response.json().code, 'InvalidApiKey');
    }
    const scrape = await gateway.app.inject({ url: '/metrics', headers: { authorization: admin } });
    assert.equal(scrape.statusCode, 200);
    assert.match(String(scrape.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    assert.equal(scrape.headers['server-timing'], undefined);
    const samples = parseSamples(scrape.body);

    assert.deepEqual(samplesOf(samples, 'imagegate_requests_total', { route: GENERATION_URL }), [
      {
        labels: { route: GENERATION_URL, method: 'POST', model: MODEL_A, status: '200', code: '' },
        value: 1,
      },
      {
        labels: {
          route: GENERATION_URL,
          method: 'POST',
          model: MODEL_A,
          status: '400',
          code: 'InvalidParameter',
        },
        value: 1,
      },
      {
        labels: {
          route: GENERATION_URL,
          method: 'POST',
          model: '',
          status: '401',
          code: 'InvalidApiKey',
        },
        value: 1,
      },
    ]);
    assert.deepEqual(samplesOf(samples, 'imagegate_requests_total', { route: '/metrics' }), [
      {
        labels: {
          route: '/metrics',
          method: 'GET',
          model: '',
          status: '401',
          code: 'InvalidApiKey',
        },
        value: 2,
      },
    ]);
    assert.deepEqual(samplesOf(samples, 'imagegate_images_delivered_total'), [
      { labels: { model: MODEL_A }, value: 2 },
    ]);
    assert.deepEqual(samplesOf(samples, 'imagegate_images_billed_total'), [
      { labels: { model: MODEL_A }, value: 2 },
    ]);
    assert.deepEqual(samplesOf(samples, 'imagegate_gateway_overhead_seconds_count'), [
      { labels: { model: MODEL_A }, value: 2 },
    ]);
    assert.deepEqual(samplesOf(samples, 'imagegate_upstream_latency_seconds_count'), [
      { labels: { model: MODEL_A, channel: 'local' }, value: 1 },
    ]);
    assert.deepEqual(samplesOf(samples, 'imagegate_channel_attempts_total'), [
      { labels: { channel: 'local' }, value: 1 },
    ]);
    assert.deepEqual(samplesOf(samples, 'imagegate_channel_failures_total'), [
      { labels: { channel: 'local' }, value: 0 },
    ]);
    assert.deepEqual(samplesOf(samples, 'imagegate_channel_state', { state: 'available' }), [
      { labels: { channel: 'local', state: 'available' }, value: 1 },
    ]);
    // The 400's row waits for the ledger's next flush; the 401 has no token to record against.
    assert.deepEqual(samplesOf(samples, 'imagegate_ledger_queue_rows'), [{ labels: {}, value: 1 }]);
    assert.equal(samplesOf(samples, 'nodejs_eventloop_lag_seconds').length, 1);
  });
});

describe('the IMAGEGATE_METRICS setting', () => {
  it('public serves /metrics without a token; off leaves no such route', async (t) => {
    const open = await startTestGateway({ env: { IMAGEGATE_METRICS: 'public' } });
    t.after(() => open.close());
    const served = await open.app.inject({ url: '/metrics' });
    assert.equal(served.statusCode, 200);
    assert.match(served.body, /^# HELP /m);

    const off = await startTestGateway({ env: { IMAGEGATE_METRICS: 'off' } });
    t.after(() => off.close());
    const missing = await off.app.inject({
      url: '/metrics',
      headers: { authorization: await off.bearer({ admin: true }) },
    });
    assert.equal(missing.statusCode, 404);
    assert.equal(missing.json().code, 'NotFound');
  });
});
