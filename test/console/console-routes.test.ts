import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Fastify from 'fastify';
import { DEFAULT_MODEL_ALIASES } from '../../src/domain/model-aliases.js';
import type { ConsoleFile } from '../../src/http/console/console-files.js';
import { registerConsoleRoutes } from '../../src/http/console/console-routes.js';
import { handleError } from '../../src/http/error-reply.js';
import { ConsoleCallBounds } from '../../src/admission/console-call-bounds.js';
import { MemoryRateLimiter } from '../../src/admission/memory-rate-limiter.js';
import { silentLog } from '../../src/support/log.js';
import { parseSamples, samplesOf } from '../metrics/prometheus-text.js';
import { GENERATION_URL } from '../helpers/requests.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

const PALETTE_OFF_BY_ONE = {
  model: 'gen-2.7-image-pro',
  input: { messages: [{ role: 'user', content: [{ text: 'a red kite' }] }] },
  parameters: {
    color_palette: [
      { hex: '#112233', ratio: '40.00%' },
      { hex: '#445566', ratio: '30.00%' },
      { hex: '#778899', ratio: '29.00%' },
    ],
  },
};

function file(body: string, cacheControl: string, contentType: string): ConsoleFile {
  return { body: Buffer.from(body), cacheControl, contentType };
}

describe('the console routes over built files', () => {
  const app = Fastify();
  app.setErrorHandler(handleError);
  registerConsoleRoutes(app, {
    files: new Map([
      ['index.html', file('<!doctype html>', 'no-cache', 'text/html; charset=utf-8')],
      [
        'assets/index-abc123.js',
        file('export {}', 'public, max-age=31536000, immutable', 'text/javascript'),
      ],
    ]),
    authenticator: { verifyAuthorization: () => ({}) as never },
    modelAliases: DEFAULT_MODEL_ALIASES,
    extraOrigins: ['https://images.example.com'],
    bounds: new ConsoleCallBounds({
      limiter: new MemoryRateLimiter(),
      callsPerMinute: 600,
      log: silentLog,
    }),
    inputs: { load: () => Promise.reject(new Error('no image is loaded here')) },
  });

  it('serves index.html to be revalidated and hashed assets for a year, both under the CSP', async () => {
    const index = await app.inject({ url: '/console/' });
    assert.equal(index.statusCode, 200);
    assert.equal(index.headers['cache-control'], 'no-cache');
    const policy = String(index.headers['content-security-policy']);
    for (const directive of [
      "default-src 'self'",
      "script-src 'self'",
      "style-src 'self'",
      "img-src 'self' data: blob: https://images.example.com",
      "connect-src 'self' https://images.example.com",
      "frame-ancestors 'none'",
      "base-uri 'none'",
    ])
      assert.ok(policy.includes(directive), `${directive} in ${policy}`);
    assert.doesNotMatch(policy, /unsafe/);
    const asset = await app.inject({ url: '/console/assets/index-abc123.js' });
    assert.equal(asset.headers['cache-control'], 'public, max-age=31536000, immutable');
    assert.equal((await app.inject({ url: '/console/assets/nope.js' })).statusCode, 404);
    const bare = await app.inject({ url: '/console' });
    assert.equal(bare.statusCode, 308);
    assert.equal(bare.headers.location, '/console/');
  });
});

describe('POST /console/api/validate', () => {
  let gateway: TestGateway;
  let caller: string;
  let admin: string;
  before(async () => {
    gateway = await startTestGateway({ env: { IMAGEGATE_LEDGER_FLUSH_MS: '60000' } });
    caller = await gateway.bearer();
    admin = await gateway.bearer({ admin: true });
  });
  after(() => gateway.close());

  const ledgerQueue = async () => {
    const scrape = await gateway.app.inject({ url: '/metrics', headers: { authorization: admin } });
    return samplesOf(parseSamples(scrape.body), 'imagegate_ledger_queue_rows')[0]?.value;
  };

  it('answers what the generation route would refuse, and spends and records nothing', async () => {
    const checked = await gateway.app.inject({
      method: 'POST',
      url: '/console/api/validate',
      headers: { authorization: caller },
      payload: PALETTE_OFF_BY_ONE,
    });
    assert.equal(checked.statusCode, 400);
    assert.equal(checked.json().code, 'InvalidParameter');
    assert.match(checked.json().message, /^parameters\.color_palette/);
    assert.equal(await ledgerQueue(), 0, 'a validation writes no ledger row');

    const refused = await gateway.app.inject({
      method: 'POST',
      url: GENERATION_URL,
      headers: { authorization: caller },
      payload: PALETTE_OFF_BY_ONE,
    });
    assert.equal(refused.json().message, checked.json().message, 'the same validator speaks');
    assert.equal(await ledgerQueue(), 1, 'the refused generation has its row');
  });

  it('names the model and mode of a valid body, resolving an alias', async () => {
    const body = structuredClone(PALETTE_OFF_BY_ONE);
    body.model = 'wan2.7-image-pro';
    body.parameters.color_palette[2]!.ratio = '30.00%';
    const checked = await gateway.app.inject({
      method: 'POST',
      url: '/console/api/validate',
      headers: { authorization: caller },
      payload: body,
    });
    assert.equal(checked.statusCode, 200);
    assert.deepEqual(checked.json(), {
      valid: true,
      model: 'gen-2.7-image-pro',
      mode: 'text-to-image',
    });
  });

  it('needs a valid token', async () => {
    const anonymous = await gateway.app.inject({
      method: 'POST',
      url: '/console/api/validate',
      payload: PALETTE_OFF_BY_ONE,
    });
    assert.equal(anonymous.statusCode, 401);
    assert.equal(anonymous.json().code, 'InvalidApiKey');
  });
});

describe('the IMAGEGATE_CONSOLE setting', () => {
  it('off leaves no console, no validation, preview or models endpoint', async (t) => {
    const off = await startTestGateway({ env: { IMAGEGATE_CONSOLE: 'off' } });
    t.after(() => off.close());
    const authorization = await off.bearer();
    for (const [method, url] of [
      ['GET', '/console/'],
      ['GET', '/console'],
      ['GET', '/console/api/models'],
      ['GET', '/docs'],
      ['POST', '/console/api/validate'],
      ['POST', '/console/api/preview'],
    ] as const) {
      const answer = await off.app.inject({
        method,
        url,
        headers: { authorization },
        ...(method === 'POST' ? { payload: PALETTE_OFF_BY_ONE } : {}),
      });
      assert.equal(answer.statusCode, 404, `${method} ${url}`);
    }
  });
});
