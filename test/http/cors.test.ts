import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CORS_REQUEST_HEADERS } from '../../src/http/hooks/cors.js';
import { eventually, gate, startBillingGateway } from '../helpers/billing-gateway.js';
import { type RawAnswer, rawExchange } from '../helpers/raw-http.js';
import { GENERATION_URL, modelBBody } from '../helpers/requests.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const APP = 'https://app.example.com';
const BODY = JSON.stringify(modelBBody({ size: '512*512' }));
const EXPOSED =
  'X-Request-Id, Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Idempotent-Replayed, X-Prompt-Truncated';

/**
 * One request on its own connection, head and body written byte for byte; read once whole, with
 * no wait to see whether the server closes the connection after it (no test here asks).
 */
function exchange(port: number, method: string, url: string, headers: Record<string, string>) {
  const body = method === 'POST' ? BODY : undefined;
  const lines = [
    `${method} ${url} HTTP/1.1`,
    'Host: gateway.test',
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    ...(body === undefined ? [] : [`Content-Length: ${Buffer.byteLength(body)}`]),
  ];
  return rawExchange(port, `${lines.join('\r\n')}\r\n\r\n`, {
    waitForCloseMs: 0,
    ...(body === undefined ? {} : { body }),
  });
}

function preflight(port: number, url: string, origin: string, method = 'POST') {
  return exchange(port, 'OPTIONS', url, {
    Origin: origin,
    'Access-Control-Request-Method': method,
    'Access-Control-Request-Headers':
      'authorization, content-type, x-dashscope-async, x-dashscope-workspace',
  });
}

function assertNoCors(answer: RawAnswer) {
  for (const name of Object.keys(answer.headers))
    assert.ok(!name.startsWith('access-control-'), `unexpected ${name}`);
}

async function listening(env: Record<string, string>) {
  const gateway = await startTestGateway({ env });
  const port = Number(new URL(await gateway.listen()).port);
  return { gateway, port };
}

describe('CORS with IMAGEGATE_CORS_ORIGINS listing origins', () => {
  let gateway: TestGateway;
  let port: number;
  let authorization: string;
  before(async () => {
    ({ gateway, port } = await listening({
      IMAGEGATE_CORS_ORIGINS: `${APP}, http://LOCALHOST:5173/`,
    }));
    authorization = await gateway.bearer();
  });
  after(() => gateway.close());

  it('answers a preflight on every route with 204, without a token, and records nothing', async () => {
    const paths = [
      GENERATION_URL,
      '/api/v1/services/aigc/multimodal-generation/generation',
      '/images/0123.png?expires=1&signature=x',
      '/api/v1/tasks/some-task-id',
    ];
    for (const path of paths) {
      const answer = await preflight(port, path, APP);
      assert.equal(answer.status, 204, path);
      assert.equal(answer.body, '');
      assert.equal(answer.headers['access-control-allow-origin'], APP);
      assert.equal(answer.headers.vary, 'Origin');
      assert.equal(answer.headers['access-control-allow-methods'], 'GET, HEAD, POST');
      assert.equal(answer.headers['access-control-allow-headers'], CORS_REQUEST_HEADERS.join(', '));
      assert.equal(answer.headers['access-control-max-age'], '600');
      assert.ok(answer.headers['x-request-id']);
    }
    const fromDevServer = await preflight(port, GENERATION_URL, 'http://localhost:5173');
    assert.equal(
      fromDevServer.status,
      204,
      'configured origins are normalised as browsers send them',
    );
    assert.equal(fromDevServer.headers['access-control-allow-origin'], 'http://localhost:5173');
    await gateway.admission.ledger.flush();
    assert.deepEqual(await gateway.admission.usage.list({}, 10), []);
  });

  it('allows the SDK’s headers: X-DashScope-Async, -SSE, -OssResourceResolve, -WorkSpace, -DataInspection and the rest', async () => {
    const allowed = (await preflight(port, GENERATION_URL, APP)).headers[
      'access-control-allow-headers'
    ]?.split(', ');
    for (const header of [
      'Authorization',
      'Content-Type',
      'Idempotency-Key',
      'X-DashScope-Async',
      'X-DashScope-SSE',
      'X-DashScope-OssResourceResolve',
      'X-DashScope-WorkSpace',
      'X-DashScope-DataInspection',
      'X-Accel-Buffering',
    ])
      assert.ok(allowed?.includes(header), header);
  });

  it('lets the page read the answer and its headers: success, event stream, 401, 404 and 429 alike', async () => {
    const ok = await exchange(port, 'POST', GENERATION_URL, {
      Origin: APP,
      Authorization: authorization,
      'Content-Type': 'application/json',
    });
    assert.equal(ok.status, 200, ok.body);
    const unauthenticated = await exchange(port, 'POST', GENERATION_URL, {
      Origin: APP,
      'Content-Type': 'application/json',
    });
    assert.equal(unauthenticated.status, 401);
    const missingImage = await exchange(port, 'GET', '/images/0123.png?expires=1&signature=x', {
      Origin: APP,
    });
    assert.equal(missingImage.status, 404);

    const limited = {
      Origin: APP,
      Authorization: await gateway.bearer({ limits: { requestsPerMinute: 1 } }),
      'Content-Type': 'application/json',
    };
    assert.equal((await exchange(port, 'POST', GENERATION_URL, limited)).status, 200);
    const throttled = await exchange(port, 'POST', GENERATION_URL, limited);
    assert.equal(throttled.status, 429);
    assert.ok(throttled.headers['retry-after']);
    assert.equal(throttled.headers['ratelimit-limit'], '1');

    const streamed = await exchange(port, 'POST', GENERATION_URL, {
      Origin: APP,
      Authorization: authorization,
      'Content-Type': 'application/json',
      'X-DashScope-SSE': 'enable',
    });
    assert.equal(streamed.status, 200);
    assert.match(streamed.headers['content-type'] ?? '', /^text\/event-stream/);

    for (const answer of [ok, unauthenticated, missingImage, throttled, streamed]) {
      assert.equal(answer.headers['access-control-allow-origin'], APP, answer.body);
      assert.equal(answer.headers['access-control-expose-headers'], EXPOSED);
      assert.equal(answer.headers.vary, 'Origin');
      assert.ok(answer.headers['x-request-id']);
    }
  });

  it('gives an origin not listed no CORS header: its preflight meets the route’s 405 or 404', async () => {
    const refused = await preflight(port, GENERATION_URL, 'https://evil.example');
    assert.equal(refused.status, 405);
    assert.equal(JSON.parse(refused.body).code, 'MethodNotAllowed');
    assert.equal(refused.headers.allow, 'POST');
    assertNoCors(refused);
    assert.equal(
      refused.headers.vary,
      'Origin',
      'a shared cache must not reuse it for another origin',
    );
    assertNoCors(await preflight(port, '/images/0123.png', 'https://evil.example'));
    const actual = await exchange(port, 'POST', GENERATION_URL, {
      Origin: 'https://app.example.com.evil.example',
      Authorization: authorization,
      'Content-Type': 'application/json',
    });
    assert.equal(actual.status, 200);
    assertNoCors(actual);
  });

  it('keeps 405 MethodNotAllowed for a plain OPTIONS, and for one with Origin but no requested method', async () => {
    const plain: Record<string, string>[] = [{}, { Origin: APP }];
    for (const headers of plain) {
      const answer = await exchange(port, 'OPTIONS', GENERATION_URL, headers);
      assert.equal(answer.status, 405);
      assert.equal(JSON.parse(answer.body).code, 'MethodNotAllowed');
      assert.equal(answer.headers['access-control-allow-methods'], undefined);
    }
  });
});

describe('CORS with IMAGEGATE_CORS_ORIGINS=*', () => {
  it('allows every origin with *, and needs no Vary', async (t) => {
    const { gateway, port } = await listening({ IMAGEGATE_CORS_ORIGINS: '*' });
    t.after(() => gateway.close());
    const answer = await preflight(port, GENERATION_URL, 'https://anyone.example');
    assert.equal(answer.status, 204);
    assert.equal(answer.headers['access-control-allow-origin'], '*');
    assert.equal(answer.headers.vary, undefined);
    const health = await exchange(port, 'GET', '/healthz', { Origin: 'null' });
    assert.equal(health.headers['access-control-allow-origin'], '*');
    assert.equal(health.headers['access-control-expose-headers'], EXPOSED);
  });
});

describe('CORS off (the default)', () => {
  it('adds no CORS header anywhere, and a preflight gets the route’s 405', async (t) => {
    const { gateway, port } = await listening({});
    t.after(() => gateway.close());
    const answer = await preflight(port, GENERATION_URL, APP);
    assert.equal(answer.status, 405);
    assertNoCors(answer);
    assert.equal(answer.headers.vary, undefined);
    assertNoCors(await exchange(port, 'GET', '/healthz', { Origin: APP }));
  });
});

describe('CORS on the load shedder’s answers', () => {
  it('gives a 503 Overloaded the CORS headers, so a page can read Retry-After', async (t) => {
    const gateway = await startBillingGateway({
      env: { IMAGEGATE_CORS_ORIGINS: APP, IMAGEGATE_MAX_INFLIGHT_REQUESTS: '1' },
    });
    t.after(() => gateway.close());
    const port = Number(new URL(await gateway.app.listen({ host: '127.0.0.1', port: 0 })).port);
    const { authorization } = await gateway.token();
    const held = gate();
    gateway.engine.gate = held.promise;
    const first = exchange(port, 'POST', GENERATION_URL, {
      Origin: APP,
      Authorization: authorization,
      'Content-Type': 'application/json',
    });
    await eventually(() => gateway.engine.calls === 1);
    const shed = await exchange(port, 'GET', '/images/0123.png', { Origin: APP });
    assert.equal(shed.status, 503);
    assert.equal(JSON.parse(shed.body).code, 'Overloaded');
    assert.equal(shed.headers['retry-after'], '1');
    assert.equal(shed.headers['access-control-allow-origin'], APP);
    assert.equal(shed.headers['access-control-expose-headers'], EXPOSED);
    assert.ok(shed.headers['x-request-id']);
    held.open();
    assert.equal((await first).status, 200);
  });
});
