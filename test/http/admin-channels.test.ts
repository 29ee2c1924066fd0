import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Principal } from '../../src/domain/principal.js';
import type { ReloadableRouter } from '../../src/channels/reloadable-router.js';
import { GatewayError } from '../../src/errors/gateway-error.js';
import { buildApp } from '../../src/http/app.js';
import { channels, routerFor, temporaryStorage } from '../channels/channel-fixtures.js';

const KEY = 'sk-admin-test-secret-key-42';
const principal = (admin: boolean): Principal => ({
  tokenId: 't',
  account: 'a',
  admin,
  issuer: 'gateway',
});

describe('GET /admin/channels', () => {
  let storage: Awaited<ReturnType<typeof temporaryStorage>>;
  let router: ReloadableRouter;
  let app: ReturnType<typeof buildApp>;

  before(async () => {
    storage = await temporaryStorage();
    router = routerFor(
      channels(
        [
          {
            name: 'ds-primary',
            type: 'dashscope',
            base_url: 'https://dashscope.aliyuncs.com',
            api_key_env: 'DS_KEY',
            mode: 'async',
          },
          { name: 'fallback', type: 'local', priority: 5 },
        ],
        { DS_KEY: KEY },
      ),
      { storage },
    );
    app = buildApp({
      config: { routePrefix: '/vendor', maxBodyBytes: 1024, logLevel: 'silent' },
      authenticator: {
        async verifyAuthorization(header) {
          if (header === 'Bearer admin') return principal(true);
          if (header === 'Bearer user') return principal(false);
          throw new GatewayError('InvalidApiKey', 'missing or invalid token');
        },
      },
      generation: {
        generate: async () =>
          Promise.reject(new GatewayError('NoAvailableChannel', 'not in this test')),
        generateUnbilled: async () =>
          Promise.reject(new GatewayError('NoAvailableChannel', 'not in this test')),
      },
      ledger: { record: () => undefined },
      checkReady: async () => undefined,
      version: 'test',
      channels: router,
    });
  });
  after(async () => {
    await app.close();
    await router.close();
    await storage.dispose();
  });

  it('needs an admin token', async () => {
    for (const authorization of [undefined, 'Bearer user', 'Bearer nonsense']) {
      const response = await app.inject({
        method: 'GET',
        url: '/admin/channels',
        headers: authorization === undefined ? {} : { authorization },
      });
      assert.equal(response.statusCode, 401, String(authorization));
      assert.equal(response.json().code, 'InvalidApiKey');
      assert.ok(!response.body.includes('ds-primary'));
    }
  });

  it('shows the running channels with health and breaker state, and never a key', async () => {
    const response = await app.inject({
      method: 'GET',
      url: '/admin/channels',
      headers: { authorization: 'Bearer admin' },
    });
    assert.equal(response.statusCode, 200);
    assert.equal(response.headers['cache-control'], 'no-store');
    assert.ok(!response.body.includes(KEY));
    const { channels: listed } = response.json() as { channels: Record<string, unknown>[] };
    assert.deepEqual(
      listed.map((channel) => [
        channel.name,
        channel.type,
        channel.health,
        channel.apiKey,
        channel.mode,
      ]),
      [
        ['ds-primary', 'dashscope', 'available', 'set', 'async'],
        ['fallback', 'local', 'available', 'none', undefined],
      ],
    );
    const [primary] = listed;
    assert.equal(primary?.baseUrl, 'https://dashscope.aliyuncs.com');
    assert.deepEqual(primary?.models, {
      'gen-2.7-image-pro': 'wan2.7-image-pro',
      'txt-image-2.0-pro': 'qwen-image-2.0-pro',
    });
    assert.deepEqual(primary?.breaker, {
      state: 'closed',
      consecutiveFailures: 0,
      failureThreshold: 5,
      cooldownMs: 30_000,
    });
    assert.deepEqual(primary?.stats, { attempts: 0, successes: 0, failures: 0, inFlight: 0 });
    assert.deepEqual((primary?.capabilities as { sizes: string }).sizes, 'exact');
  });
});
