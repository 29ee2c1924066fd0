import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { GatewayMetrics } from '../../src/metrics/gateway-metrics.js';
import { type BillingGateway, startBillingGateway } from '../helpers/billing-gateway.js';
import { parseSamples, samplesOf } from '../metrics/prometheus-text.js';

/**
 * URLs Fastify refuses before any route or hook runs: once answered in Fastify's own shape
 * (`FST_ERR_BAD_URL`, a 414 `FST_ERR_MAX_PARAM_LENGTH`) without a request id.
 */
describe('URLs refused before routing', () => {
  let gateway: BillingGateway;
  const metrics = new GatewayMetrics();

  before(async () => {
    gateway = await startBillingGateway({ metrics });
  });
  after(() => gateway.close());

  it('answers a percent-escape that is not UTF-8 with 400 InvalidParameter naming the path', async () => {
    for (const url of ['/api/v1/tasks/%FF', '/images/%FF.png?expires=1&signature=x', '/foo/%C3']) {
      const answer = await gateway.app.inject({ url });
      assert.equal(answer.statusCode, 400, url);
      const body = answer.json<{ code: string; message: string; request_id: string }>();
      assert.equal(body.code, 'InvalidParameter');
      assert.match(body.message, /^path: /);
      assert.equal(body.request_id, answer.headers['x-request-id']);
    }
  });

  it('answers a path parameter longer than any id with 404 NotFound, without echoing it', async () => {
    const answer = await gateway.app.inject({ url: `/v1/models/${'a'.repeat(5000)}` });
    assert.equal(answer.statusCode, 404);
    const body = answer.json<{ error: { code: string; message: string } }>();
    assert.equal(body.error.code, 'NotFound');
    assert.match(body.error.message, /longer than 100 characters/);
    assert.ok(body.error.message.length < 200, 'the path is not echoed');
    assert.ok(answer.headers['x-request-id']);
  });

  it("takes OpenAI's error shape under /v1", async () => {
    const answer = await gateway.app.inject({ url: '/v1/models/%FF' });
    assert.equal(answer.statusCode, 400);
    const body = answer.json<{ error: { message: string; type: string } }>();
    assert.match(body.error.message, /^path: /);
    assert.equal(body.error.type, 'invalid_request_error');
  });

  it('counts them in the request metrics, as every answered request is', async () => {
    const before = await requestCounts();
    const url = await gateway.app.listen({ port: 0, host: '127.0.0.1' });
    for (const path of ['/api/v1/tasks/%FF', `/api/v1/tasks/${'a'.repeat(500)}`])
      await (await fetch(`${url}${path}`)).arrayBuffer();
    const after = await requestCounts();
    assert.equal(
      (after.get('400 InvalidParameter') ?? 0) - (before.get('400 InvalidParameter') ?? 0),
      1,
    );
    assert.equal((after.get('404 NotFound') ?? 0) - (before.get('404 NotFound') ?? 0), 1);
  });

  it('counts them with the status answered under inject too, never as callers who left', async () => {
    const before = await requestCounts();
    await gateway.app.inject({ url: '/api/v1/tasks/%FF' });
    const after = await requestCounts();
    const added = (key: string) => (after.get(key) ?? 0) - (before.get(key) ?? 0);
    assert.equal(added('400 InvalidParameter'), 1);
    assert.equal(added('499 CallerGone'), 0);
  });

  async function requestCounts(): Promise<Map<string, number>> {
    const counts = new Map<string, number>();
    for (const sample of samplesOf(
      parseSamples(await metrics.scrape()),
      'imagegate_requests_total',
    ))
      counts.set(`${sample.labels.status} ${sample.labels.code}`, sample.value);
    return counts;
  }
});
