import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type BillingGateway, startBillingGateway } from '../helpers/billing-gateway.js';

/**
 * URLs Fastify refuses before any route or hook runs: once answered in Fastify's own shape
 * (`FST_ERR_BAD_URL`, a 414 `FST_ERR_MAX_PARAM_LENGTH`) without a request id.
 */
describe('URLs refused before routing', () => {
  let gateway: BillingGateway;

  before(async () => {
    gateway = await startBillingGateway();
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
});
