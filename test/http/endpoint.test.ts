import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { GENERATION_URL, modelABody } from '../helpers/requests.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

describe('the endpoint outside validation', () => {
  let gateway: TestGateway;
  let authorization: string;

  before(async () => {
    gateway = await startTestGateway({ env: { IMAGEGATE_MAX_BODY_BYTES: '4096' } });
    authorization = await gateway.bearer();
  });
  after(() => gateway.close());

  const post = (payload: string | object | undefined, headers: Record<string, string> = {}) =>
    gateway.app.inject({
      method: 'POST',
      url: GENERATION_URL,
      headers: { authorization, 'content-type': 'application/json', ...headers },
      payload: payload as string,
    });

  it('answers an unknown route with a JSON 404 NotFound and a request id', async () => {
    const response = await gateway.app.inject({ method: 'GET', url: '/nope' });
    assert.equal(response.statusCode, 404);
    const body = response.json();
    assert.equal(body.code, 'NotFound');
    assert.equal(body.request_id, response.headers['x-request-id']);
  });

  it('answers another method on the endpoint with 405 MethodNotAllowed and Allow: POST', async () => {
    for (const method of ['GET', 'PUT', 'DELETE', 'PATCH'] as const) {
      const response = await gateway.app.inject({ method, url: GENERATION_URL });
      assert.equal(response.statusCode, 405, method);
      assert.equal(response.json().code, 'MethodNotAllowed');
      assert.equal(response.headers.allow, 'POST');
    }
  });

  it('answers route and method before reading the body: 404 and 405 whatever body comes along', async () => {
    const send = (method: 'POST' | 'PUT' | 'DELETE', url: string, payload: string) =>
      gateway.app.inject({
        method,
        url,
        headers: { authorization, 'content-type': 'application/json' },
        payload,
      });
    const oversized = `{"x":"${'a'.repeat(100 * 1024)}"}`;
    for (const [url, payload] of [
      ['/healthz', '{'],
      ['/nope', '{'],
      ['/nope', oversized],
    ] as const) {
      const response = await send('POST', url, payload);
      assert.equal(response.statusCode, 404, `POST ${url}: ${response.body.slice(0, 200)}`);
      assert.equal(response.json().code, 'NotFound');
    }
    const openAi = await send('POST', '/v1/nope', '{');
    assert.equal(openAi.statusCode, 404);
    assert.equal(openAi.json().error.code, 'NotFound');
    for (const [method, payload] of [
      ['DELETE', '{'],
      ['PUT', oversized],
    ] as const) {
      const response = await send(method, GENERATION_URL, payload);
      assert.equal(response.statusCode, 405, `${method}: ${response.body.slice(0, 200)}`);
      assert.equal(response.json().code, 'MethodNotAllowed');
      assert.equal(response.headers.allow, 'POST');
    }
  });

  it('keeps a sane incoming X-Request-Id and replaces an unsafe one', async () => {
    const kept = await post('{', { 'x-request-id': 'trace-42.a:b' });
    assert.equal(kept.headers['x-request-id'], 'trace-42.a:b');
    assert.equal(kept.json().request_id, 'trace-42.a:b');
    const replaced = await post('{', { 'x-request-id': 'bad id with spaces' });
    assert.notEqual(replaced.headers['x-request-id'], 'bad id with spaces');
    assert.match(String(replaced.headers['x-request-id']), /^[0-9a-f-]{36}$/);
  });

  it('rejects a body that is not JSON, empty, or of another content type with 400 InvalidParameter', async () => {
    const cases: [string | undefined, Record<string, string>, RegExp][] = [
      ['{not json', {}, /not valid JSON/],
      ['', {}, /empty/],
      ['hello', { 'content-type': 'text/plain' }, /Content-Type must be application\/json/],
      ['<x/>', { 'content-type': 'application/xml' }, /Content-Type must be application\/json/],
      ['[1,2]', {}, /body: must be a JSON object/],
      ['"text"', {}, /body: must be a JSON object/],
      ['null', {}, /body: must be a JSON object/],
      ['{"__proto__":{"x":1}}', {}, /^body: holds a key named __proto__/],
      [
        '{"constructor":{"prototype":{"x":1}}}',
        {},
        /^body: holds a key named __proto__, or constructor/,
      ],
      ['{"__proto__":{"x":1}', {}, /not valid JSON/],
    ];
    for (const [payload, headers, message] of cases) {
      const response = await post(payload, headers);
      assert.equal(response.statusCode, 400, `${payload}: ${response.body}`);
      assert.equal(response.json().code, 'InvalidParameter');
      assert.match(response.json().message, message);
    }
  });

  it('rejects a body over the limit with 413 RequestTooLarge, from Content-Length and while streaming', async () => {
    const big = JSON.stringify(modelABody(undefined, [{ text: 'x'.repeat(5000) }]));
    const declared = await post(big);
    assert.equal(declared.statusCode, 413);
    assert.equal(declared.json().code, 'RequestTooLarge');
  });

  it('answers a valid request with generated images from the built-in local engine', async () => {
    const response = await post(modelABody({ size: '1K' }));
    assert.equal(response.statusCode, 200, response.body);
    const body = response.json();
    assert.equal(body.output.choices[0].message.content.length, 1);
    assert.equal(body.usage.size, '1024*1024');
    assert.equal(body.request_id, response.headers['x-request-id']);
  });

  it('serves healthz, readyz and an OpenAPI 3.1 document without a token', async () => {
    assert.equal((await gateway.app.inject({ url: '/healthz' })).json().status, 'ok');
    assert.equal((await gateway.app.inject({ url: '/readyz' })).json().status, 'ready');
    const openapi = (await gateway.app.inject({ url: '/openapi.json' })).json();
    assert.equal(openapi.openapi, '3.1.0');
    assert.ok(openapi.paths[GENERATION_URL].post);
    assert.ok(openapi.paths['/vendor/api/v1/uploads'].get);
    assert.deepEqual(openapi.paths['/vendor/api/v1/uploads'].post.security, []);
    assert.deepEqual(Object.keys(openapi.paths['/vendor/api/v1/uploads'].post.responses), [
      '200',
      '400',
      '401',
      '413',
      '415',
    ]);
    assert.deepEqual(openapi.components.schemas.ModelARequest.properties.model.enum, [
      'gen-2.7-image-pro',
      'wan2.7-image-pro',
    ]);
    const answered = openapi.paths[GENERATION_URL].post.responses['200'].content;
    assert.deepEqual(Object.keys(answered), ['application/json', 'text/event-stream']);
    for (const model of ['ModelARequest', 'ModelBRequest'])
      assert.deepEqual(
        openapi.components.schemas[model].properties.parameters.properties.result_format.const,
        'message',
      );
  });

  it('answers at the bare DashScope path too', async () => {
    const response = await gateway.app.inject({
      method: 'POST',
      url: '/api/v1/services/aigc/multimodal-generation/generation',
      headers: { authorization, 'content-type': 'application/json' },
      payload: '{}',
    });
    assert.equal(response.statusCode, 400);
    assert.match(response.json().message, /^model: is required/);
  });
});
