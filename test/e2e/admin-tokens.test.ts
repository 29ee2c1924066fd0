import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { MODEL_A } from '../../src/domain/models.js';
import type { DatabaseTarget } from '../../src/store/database/database.js';
import type { TokenView } from '../../src/tokens/token-view.js';
import { BACKENDS } from '../helpers/database-backends.js';
import { GENERATION_URL, modelABody } from '../helpers/requests.js';
import { startTestGateway } from '../helpers/test-gateway.js';
import { eventually } from '../helpers/waits.js';

type Method = 'GET' | 'POST' | 'PATCH';

async function adminRig(t: TestContext, target: DatabaseTarget, env: Record<string, string> = {}) {
  const gateway = await startTestGateway({ database: target, env });
  t.after(() => gateway.close());
  const admin = await gateway.bearer({ name: 'root', admin: true });
  const call = async (
    method: Method,
    url: string,
    body?: unknown,
    /** null: no Authorization header. */
    authorization: string | null = admin,
  ) => {
    const answer = await gateway.app.inject({
      method,
      url,
      headers: {
        ...(authorization === null ? {} : { authorization }),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined
        ? {}
        : { payload: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    return {
      status: answer.statusCode,
      json: () => answer.json() as Record<string, unknown>,
      answer,
    };
  };
  const create = async (body: Record<string, unknown>) => {
    const answer = await call('POST', '/admin/tokens', body);
    assert.equal(answer.status, 201, answer.answer.body);
    const { token, record } = answer.json() as { token: string; record: TokenView };
    return { bearer: `Bearer ${token}`, token, record };
  };
  const generate = async (authorization: string) =>
    (
      await gateway.app.inject({
        method: 'POST',
        url: GENERATION_URL,
        headers: { authorization, 'content-type': 'application/json' },
        payload: JSON.stringify(modelABody({ size: '1K' })),
      })
    ).statusCode;
  return { gateway, admin, call, create, generate };
}

function refusal(answer: { status: number; json: () => Record<string, unknown> }) {
  const body = answer.json();
  return { status: answer.status, code: body.code, message: String(body.message) };
}

for (const [backend, targetFor] of BACKENDS) {
  describe(`the admin API for tokens on ${backend}`, () => {
    const rig = async (t: TestContext, env?: Record<string, string>) => {
      const target = await targetFor(t);
      return target === undefined ? undefined : adminRig(t, target, env);
    };

    it('creates a token whose JWT generates, and gets it by id', async (t) => {
      const r = await rig(t);
      if (r === undefined) return;
      const created = await r.create({
        name: 'ci',
        account: 'acme',
        expires_in: '30d',
        limits: { image_quota: 10, rpm: 60, models: [MODEL_A, MODEL_A] },
      });
      assert.match(created.record.id ?? '', /^tok_/);
      assert.equal(created.record.account, 'acme');
      assert.equal(created.record.admin, false);
      assert.deepEqual(created.record.limits, {
        image_quota: 10,
        rpm: 60,
        concurrency: null,
        models: [MODEL_A],
        pending_tasks: null,
        upload_mb: null,
        upload_files: null,
      });
      assert.ok(created.record.expires_at !== null);
      assert.equal(await r.generate(created.bearer), 200);
      const got = await r.call('GET', `/admin/tokens/${created.record.id}`);
      assert.equal(got.status, 200);
      assert.equal((got.json() as unknown as TokenView).images_used, 1);
    });

    it('lists with each filter and pages with a cursor', async (t) => {
      const r = await rig(t);
      if (r === undefined) return;
      const a = await r.create({ name: 'one', account: 'alpha' });
      const b = await r.create({ name: 'two', account: 'alpha' });
      const c = await r.create({ name: 'one', account: 'beta' });
      await r.call('POST', `/admin/tokens/${b.record.id}/revoke`);
      const ids = async (query: string) => {
        const answer = await r.call('GET', `/admin/tokens${query}`);
        assert.equal(answer.status, 200, answer.answer.body);
        return (answer.json().tokens as TokenView[]).map((token) => token.id);
      };
      assert.deepEqual(await ids('?account=alpha'), [a.record.id, b.record.id]);
      assert.deepEqual(await ids('?name=one'), [a.record.id, c.record.id]);
      assert.deepEqual(await ids('?revoked=true'), [b.record.id]);
      assert.deepEqual(await ids('?revoked=false&account=alpha'), [a.record.id]);
      const first = (await r.call('GET', '/admin/tokens?limit=2')).json();
      assert.equal((first.tokens as TokenView[]).length, 2);
      const rest = (
        await r.call('GET', `/admin/tokens?limit=2&cursor=${String(first.next_cursor)}`)
      ).json();
      assert.deepEqual(
        (rest.tokens as TokenView[]).map((token) => token.id),
        [b.record.id, c.record.id],
      );
      assert.equal(rest.next_cursor, null);
      for (const query of ['?limit=0', '?limit=1001', '?revoked=yes', '?cursor=nope', '?who=x'])
        assert.equal(refusal(await r.call('GET', `/admin/tokens${query}`)).status, 400, query);
    });

    it('updates limits: a new rpm applies, null removes it', async (t) => {
      const r = await rig(t);
      if (r === undefined) return;
      const created = await r.create({ name: 'limited' });
      const patched = await r.call('PATCH', `/admin/tokens/${created.record.id}`, {
        name: 'renamed',
        limits: { rpm: 1 },
        expires_at: null,
      });
      assert.equal(patched.status, 200, patched.answer.body);
      assert.equal(patched.json().name, 'renamed');
      assert.equal((patched.json() as unknown as TokenView).limits.rpm, 1);
      assert.equal(await r.generate(created.bearer), 200);
      assert.equal(await r.generate(created.bearer), 429);
      const lifted = await r.call('PATCH', `/admin/tokens/${created.record.id}`, {
        limits: { rpm: null },
      });
      assert.equal((lifted.json() as unknown as TokenView).limits.rpm, null);
      assert.equal(await r.generate(created.bearer), 200);
    });

    it('revokes: the token gets 401 within the cache time; revoking twice keeps the first time', async (t) => {
      const r = await rig(t, { IMAGEGATE_TOKEN_CACHE_MS: '300' });
      if (r === undefined) return;
      const created = await r.create({ name: 'doomed' });
      assert.equal(await r.generate(created.bearer), 200);
      const first = await r.call('POST', `/admin/tokens/${created.record.id}/revoke`);
      assert.equal(first.status, 200);
      const revokedAt = first.json().revoked_at;
      assert.equal(typeof revokedAt, 'string');
      await eventually(
        async () => (await r.generate(created.bearer)) === 401,
        5000,
        'the revoked token is refused',
      );
      const again = await r.call('POST', `/admin/tokens/${created.record.id}/revoke`);
      assert.equal(again.json().revoked_at, revokedAt);
    });

    it('applies a revocation and a new limit at once on the node that made them', async (t) => {
      const r = await rig(t, { IMAGEGATE_TOKEN_CACHE_MS: '600000' });
      if (r === undefined) return;
      const created = await r.create({ name: 'cached' });
      assert.equal(await r.generate(created.bearer), 200);
      await r.call('PATCH', `/admin/tokens/${created.record.id}`, { limits: { rpm: 1 } });
      // Requests are counted from when a rate limit applies: the first passes, the second not.
      assert.equal(await r.generate(created.bearer), 200);
      assert.equal(await r.generate(created.bearer), 429);
      await r.call('POST', `/admin/tokens/${created.record.id}/revoke`);
      assert.equal(await r.generate(created.bearer), 401);
    });

    it('refuses bad input with 400 InvalidParameter naming the field', async (t) => {
      const r = await rig(t);
      if (r === undefined) return;
      const created = await r.create({ name: 'target' });
      const cases: [Method, string, unknown, RegExp][] = [
        ['POST', '/admin/tokens', { name: 'x', limits: { rpm: -1 } }, /^limits\.rpm: /],
        ['POST', '/admin/tokens', { name: 'x', limits: { rpm: 1.5 } }, /^limits\.rpm: /],
        [
          'POST',
          '/admin/tokens',
          { name: 'x', limits: { models: ['gpt-9'] } },
          /^limits\.models: /,
        ],
        ['POST', '/admin/tokens', { name: 'x', limits: { models: 'all' } }, /^limits\.models: /],
        ['POST', '/admin/tokens', { name: 'x', limits: { speed: 1 } }, /^limits\.speed: /],
        ['POST', '/admin/tokens', { name: 'x', expires_in: 'soon' }, /^expires_in: /],
        ['POST', '/admin/tokens', { name: 'x', expires_at: 'tomorrow' }, /^expires_at: /],
        [
          'POST',
          '/admin/tokens',
          { name: 'x', expires_at: '2001-01-01T00:00:00Z' },
          /^expires_at: /,
        ],
        ['POST', '/admin/tokens', { name: 'x', colour: 'red' }, /^colour: /],
        ['POST', '/admin/tokens', { name: 'x', admin: 'yes' }, /^admin: /],
        ['POST', '/admin/tokens', { name: 7 }, /^name: /],
        ['POST', '/admin/tokens', { account: 'acme' }, /^name: is required/],
        ['POST', '/admin/tokens', { name: '  ' }, /^name: /],
        ['POST', '/admin/tokens', { name: 'n'.repeat(201) }, /^name: /],
        ['POST', '/admin/tokens', [], /^body: /],
        ['POST', '/admin/tokens', 'not json', /^body: /],
        ['POST', '/admin/tokens', '{"name": "trunc', /^body: /],
        ['PATCH', `/admin/tokens/${created.record.id}`, {}, /^body: /],
        [
          'PATCH',
          `/admin/tokens/${created.record.id}`,
          { limits: { concurrency: 0 } },
          /^limits\.concurrency: /,
        ],
        ['PATCH', `/admin/tokens/${created.record.id}`, { admin: true }, /^admin: /],
      ];
      for (const [method, url, body, message] of cases) {
        const answer = refusal(await r.call(method, url, body));
        assert.equal(answer.status, 400, JSON.stringify(body));
        assert.equal(answer.code, 'InvalidParameter');
        assert.match(answer.message, message, JSON.stringify(body));
      }
      const truncated = await r.gateway.app.inject({
        method: 'POST',
        url: '/admin/tokens',
        headers: {
          authorization: r.admin,
          'content-type': 'application/json',
          'content-length': '40',
        },
        payload: '{"name": "cut short"}',
      });
      assert.deepEqual(
        [truncated.statusCode, (truncated.json() as { code: string }).code],
        [400, 'InvalidParameter'],
      );
      const oversized = await r.call('POST', '/admin/tokens', {
        name: 'x',
        padding: 'p'.repeat(17 * 1024),
      });
      assert.deepEqual([oversized.status, oversized.json().code], [413, 'RequestTooLarge']);
    });

    it('answers 404 for an unknown id, and 401 to a non-admin token or none on every /admin route', async (t) => {
      const r = await rig(t);
      if (r === undefined) return;
      for (const [method, url] of [
        ['GET', '/admin/tokens/tok_missing'],
        ['PATCH', '/admin/tokens/tok_missing'],
        ['POST', '/admin/tokens/tok_missing/revoke'],
      ] as [Method, string][]) {
        const answer = refusal(
          await r.call(method, url, method === 'PATCH' ? { name: 'x' } : undefined),
        );
        assert.deepEqual([answer.status, answer.code], [404, 'NotFound'], url);
      }
      const user = await r.create({ name: 'user' });
      const routes: [Method, string][] = [
        ['POST', '/admin/tokens'],
        ['GET', '/admin/tokens'],
        ['GET', `/admin/tokens/${user.record.id}`],
        ['PATCH', `/admin/tokens/${user.record.id}`],
        ['POST', `/admin/tokens/${user.record.id}/revoke`],
        ['GET', '/admin/usage'],
        ['GET', '/admin/channels'],
        ['GET', '/admin/changes'],
      ];
      for (const [method, url] of routes)
        for (const authorization of [user.bearer, null]) {
          const body = method === 'GET' ? undefined : { name: 'x' };
          const answer = refusal(await r.call(method, url, body, authorization));
          assert.deepEqual(
            [answer.status, answer.code],
            [401, 'InvalidApiKey'],
            `${method} ${url}`,
          );
        }
      assert.equal(
        (await r.call('GET', `/admin/tokens/${user.record.id}`)).json().revoked_at,
        null,
      );
    });

    it('shows a non-admin token only itself at /me and only its own rows at /me/usage', async (t) => {
      const r = await rig(t);
      if (r === undefined) return;
      const mine = await r.create({ name: 'mine', account: 'acme', limits: { rpm: 5 } });
      const theirs = await r.create({ name: 'theirs', account: 'acme' });
      assert.equal(await r.generate(mine.bearer), 200);
      assert.equal(await r.generate(theirs.bearer), 200);
      const me = await r.call('GET', '/me', undefined, mine.bearer);
      assert.equal(me.status, 200);
      assert.equal(me.json().id, mine.record.id);
      assert.equal((me.json() as unknown as TokenView).limits.rpm, 5);
      await eventually(
        async () =>
          ((await r.call('GET', '/me/usage', undefined, mine.bearer)).json().rows as unknown[])
            .length === 1,
        5000,
        'the request is in the ledger',
      );
      const usage = (await r.call('GET', '/me/usage', undefined, mine.bearer)).json();
      const rows = usage.rows as { token_id?: string; token?: string }[];
      assert.ok(rows.every((row) => (row.token_id ?? row.token) === mine.record.id));
      for (const query of [`?token=${theirs.record.id}`, '?account=acme']) {
        const answer = refusal(await r.call('GET', `/me/usage${query}`, undefined, mine.bearer));
        assert.equal(answer.status, 400);
        assert.match(answer.message, /^(token|account): /);
      }
      assert.equal(refusal(await r.call('GET', '/me', undefined, null)).status, 401);
      assert.equal(refusal(await r.call('GET', '/me/usage', undefined, null)).status, 401);
    });

    it('records every change durably, never with the JWT', async (t) => {
      const r = await rig(t);
      if (r === undefined) return;
      const created = await r.create({ name: 'watched', limits: { rpm: 5 } });
      const id = String(created.record.id);
      await r.call('PATCH', `/admin/tokens/${id}`, { limits: { rpm: null, models: null } });
      await r.call('POST', `/admin/tokens/${id}/revoke`);
      const answer = await r.call('GET', `/admin/changes?token=${id}`);
      assert.equal(answer.status, 200, answer.answer.body);
      assert.ok(!answer.answer.body.includes(created.token));
      const adminId = (await r.call('GET', '/me')).json().id;
      const changes = answer.json().changes as Record<string, unknown>[];
      assert.deepEqual(
        changes.map(({ actor, action, token, fields }) => ({ actor, action, token, fields })),
        [
          { actor: adminId, action: 'revoke', token: id, fields: ['revoked_at'] },
          { actor: adminId, action: 'update', token: id, fields: ['limits.rpm', 'limits.models'] },
          { actor: adminId, action: 'create', token: id, fields: ['name', 'limits.rpm'] },
        ],
      );
      assert.equal(refusal(await r.call('GET', '/admin/changes?limit=0')).status, 400);
    });

    it('gives 50 distinct working tokens for 50 creates at once', async (t) => {
      const r = await rig(t);
      if (r === undefined) return;
      const created = await Promise.all(
        Array.from({ length: 50 }, (_, index) => r.create({ name: `bulk-${index}` })),
      );
      assert.equal(new Set(created.map((token) => token.record.id)).size, 50);
      assert.equal(new Set(created.map((token) => token.token)).size, 50);
      const statuses = await Promise.all(
        created.map(async (token) => (await r.call('GET', '/me', undefined, token.bearer)).status),
      );
      assert.deepEqual(new Set(statuses), new Set([200]));
    });
  });
}
