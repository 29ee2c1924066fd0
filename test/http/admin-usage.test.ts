import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MODEL_A, MODEL_B } from '../../src/domain/models.js';
import { startBillingGateway } from '../helpers/billing-gateway.js';
import { GENERATION_URL, modelABody, modelBBody } from '../helpers/requests.js';

describe('GET /admin/usage', () => {
  it('needs an admin token and answers the ledger as JSON or CSV, filtered and grouped', async (t) => {
    const gateway = await startBillingGateway({
      env: { IMAGEGATE_IMAGE_PRICES: `${MODEL_A}=0.5` },
    });
    t.after(() => gateway.close());
    const admin = await gateway.token({ admin: true, account: 'ops' });
    const caller = await gateway.token({ account: 'acme' });
    const other = await gateway.token({ account: 'beta' });
    const generate = (authorization: string, body: object) =>
      gateway.app.inject({
        method: 'POST',
        url: GENERATION_URL,
        headers: { authorization },
        payload: body,
      });
    await generate(caller.authorization, modelABody({ n: 3 }));
    await generate(caller.authorization, modelBBody());
    await generate(other.authorization, modelABody({ n: 9 }));
    await gateway.admission.ledger.flush();

    const get = (query: string, authorization?: string) =>
      gateway.app.inject({
        url: `/admin/usage${query}`,
        headers: authorization === undefined ? {} : { authorization },
      });
    assert.equal((await get('')).statusCode, 401);
    const notAdmin = await get('', caller.authorization);
    assert.equal(notAdmin.statusCode, 401);
    assert.match(notAdmin.json().message, /admin token/);

    const all = await get('', admin.authorization);
    assert.equal(all.statusCode, 200);
    assert.equal(all.headers['content-type'], 'application/json; charset=utf-8');
    assert.equal(Number(all.headers['content-length']), all.rawPayload.length);
    assert.equal(all.json().rows.length, 3);
    assert.deepEqual(
      all
        .json()
        .rows.map((row: { workspace: string | null; front_door: string }) => [
          row.workspace,
          row.front_door,
        ]),
      [
        [null, 'dashscope'],
        [null, 'dashscope'],
        [null, 'dashscope'],
      ],
    );
    assert.deepEqual(all.json().totals, {
      requests: 3,
      succeeded: 2,
      failed: 1,
      images_requested: 4,
      images_received: 4,
      images_delivered: 4,
      images_billed: 4,
      cost: '1.500000',
    });

    const acme = await get(`?account=acme&group_by=model`, admin.authorization);
    assert.deepEqual(
      acme
        .json()
        .groups.map((group: { model: string; images_billed: number }) => [
          group.model,
          group.images_billed,
        ]),
      [
        [MODEL_A, 3],
        [MODEL_B, 1],
      ],
    );
    const csv = await get(`?token=${other.id}&format=csv`, admin.authorization);
    assert.equal(csv.headers['content-type'], 'text/csv; charset=utf-8');
    assert.equal(Number(csv.headers['content-length']), csv.rawPayload.length);
    assert.match(csv.body, /^time,request_id,token_id,/);
    assert.match(csv.body, new RegExp(`,${other.id},beta,${MODEL_A},,,400,InvalidParameter,`));
    const future = await get('?since=2999-01-01', admin.authorization);
    assert.equal(future.json().totals.requests, 0);

    for (const [query, message] of [
      ['?group_by=hour', /^group_by: must be one of day, model, token/],
      ['?since=yesterday', /^since: must be a date/],
      ['?format=xml', /^format: must be json or csv/],
      ['?colour=red', /^colour: is not a parameter of \/admin\/usage/],
    ] as const) {
      const refused = await get(query, admin.authorization);
      assert.equal(refused.statusCode, 400, query);
      assert.equal(refused.json().code, 'InvalidParameter');
      assert.match(refused.json().message, message);
    }
  });

  it('answers the rows of one request by `request_id`, on /admin/usage and on /me/usage', async (t) => {
    const gateway = await startBillingGateway();
    t.after(() => gateway.close());
    const admin = await gateway.token({ admin: true, account: 'ops' });
    const caller = await gateway.token({ account: 'acme' });
    const other = await gateway.token({ account: 'beta' });
    const generate = async (authorization: string) => {
      const answer = await gateway.app.inject({
        method: 'POST',
        url: GENERATION_URL,
        headers: { authorization },
        payload: modelABody({ n: 2 }),
      });
      return answer.json().request_id as string;
    };
    const wanted = await generate(caller.authorization);
    await generate(caller.authorization);
    const others = await generate(other.authorization);
    await gateway.admission.ledger.flush();
    const get = async (path: string, authorization: string) => {
      const answer = await gateway.app.inject({ url: path, headers: { authorization } });
      assert.equal(answer.statusCode, 200, answer.body);
      return answer.json().rows as {
        request_id: string;
        images_billed: number;
        upstream_ms: number | null;
        storage_ms: number | null;
      }[];
    };

    for (const path of ['/admin/usage', '/me/usage']) {
      const authorization = path === '/me/usage' ? caller.authorization : admin.authorization;
      const rows = await get(`${path}?request_id=${encodeURIComponent(wanted)}`, authorization);
      assert.deepEqual(
        rows.map((row) => [row.request_id, row.images_billed]),
        [[wanted, 2]],
        path,
      );
      // Where its time went, as its Server-Timing header would have said (this fake channel's
      // images are not stored: no storage time).
      assert.equal(typeof rows[0]?.upstream_ms, 'number', JSON.stringify(rows));
      assert.equal(rows[0]?.storage_ms, null, JSON.stringify(rows));
      assert.ok(rows[0] !== undefined && 'queue_ms' in rows[0], JSON.stringify(rows));
    }
    assert.deepEqual(
      await get(`/me/usage?request_id=${encodeURIComponent(others)}`, caller.authorization),
      [],
      "another token's request is not the caller's",
    );
    const refused = await gateway.app.inject({
      url: '/admin/usage?request_id=a%1Bb',
      headers: { authorization: admin.authorization },
    });
    assert.equal(refused.statusCode, 400);
    assert.match(refused.json().message, /^request_id: must not hold a control character/);
  });

  it('lets `token update` extend a token past the expiry signed into it', async (t) => {
    let now = Date.now();
    const gateway = await startBillingGateway({ now: () => now });
    t.after(() => gateway.close());
    const { token, record } = await gateway.services.tokenIssuer.issue({
      name: 'short',
      account: 'acme',
      admin: false,
      expiresInSeconds: 60,
    });
    const call = () =>
      gateway.app.inject({
        method: 'POST',
        url: GENERATION_URL,
        headers: { authorization: `Bearer ${token}` },
        payload: modelABody(),
      });
    now += 120_000;
    const expired = await call();
    assert.equal(expired.statusCode, 401);
    assert.match(expired.json().message, /expired/);
    await gateway.admission.limits.update(record.id, { expiresAt: now + 3_600_000 });
    assert.equal((await call()).statusCode, 200);
    await gateway.admission.limits.update(record.id, { expiresAt: now - 1 });
    assert.equal((await call()).statusCode, 401);
  });
});
