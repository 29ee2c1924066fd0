import assert from 'node:assert/strict';
import { it } from 'node:test';
import { MODEL_A, MODEL_B } from '../../src/domain/models.js';
import type { Database } from '../../src/store/database/database.js';
import { SqlUsageStore } from '../../src/store/usage-store.js';
import { GENERATION_URL } from '../helpers/requests.js';
import { eventually } from '../helpers/waits.js';
import { RESERVATION_TTL_MS, startCluster } from './cluster.js';
import type { GatewayProcess } from './gateway-process.js';

interface Outcome {
  requestId: string;
  node: number;
  status: number | 'connection lost';
  imageCount: number;
  code: string | undefined;
  headers: Headers | undefined;
}

async function generate(
  node: GatewayProcess,
  nodeIndex: number,
  authorization: string,
  requestId: string,
  body: object,
): Promise<Outcome> {
  try {
    const response = await fetch(`${node.url}${GENERATION_URL}`, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json', 'x-request-id': requestId },
      body: JSON.stringify(body),
    });
    const json = (await response.json()) as { code?: string; usage?: { image_count: number } };
    return {
      requestId,
      node: nodeIndex,
      status: response.status,
      imageCount: json.usage?.image_count ?? 0,
      code: json.code,
      headers: response.headers,
    };
  } catch {
    return {
      requestId,
      node: nodeIndex,
      status: 'connection lost',
      imageCount: 0,
      code: undefined,
      headers: undefined,
    };
  }
}

function body(model: string, parameters: Record<string, unknown>) {
  return {
    model,
    input: { messages: [{ role: 'user', content: [{ text: 'a lighthouse' }] }] },
    parameters,
  };
}

const sum = (outcomes: readonly Outcome[]) =>
  outcomes.reduce((total, outcome) => total + outcome.imageCount, 0);

async function ledgerOf(database: Database, tokenId: string) {
  return new SqlUsageStore(database).list({ tokenId }, 10_000);
}

it('three gateway nodes on one PostgreSQL and Redis share quota, rate limits and the ledger, and survive a node killed mid-request', async (t) => {
  const clusterStarted = Date.now();
  const cluster = await startCluster(t);
  if (cluster === undefined) return;
  t.diagnostic(`three nodes up in ${Date.now() - clusterStarted} ms`);
  const { nodes, database } = cluster;
  const nodeFor = (index: number) => index % nodes.length;
  const fire = (token: { authorization: string }, prefix: string, count: number, payload: object) =>
    Promise.all(
      Array.from({ length: count }, (_, index) =>
        generate(
          nodes[nodeFor(index)] as GatewayProcess,
          nodeFor(index),
          token.authorization,
          `${prefix}-${index}`,
          payload,
        ),
      ),
    );

  // 1. Quota: 45 concurrent requests for 2 images each, through all three nodes, against 20 images.
  const quotaToken = await cluster.token({ imageQuota: 20 });
  const quotaOutcomes = await fire(
    quotaToken,
    'quota',
    45,
    body(MODEL_B, { n: 2, size: '512*512' }),
  );
  const billedByResponses = sum(quotaOutcomes);
  assert.ok(billedByResponses <= 20, `responses report ${billedByResponses} images`);
  assert.deepEqual(
    new Set(quotaOutcomes.map((outcome) => (outcome.status === 200 ? 'ok' : outcome.code))),
    new Set(['ok', 'Throttling.AllocationQuota']),
  );
  assert.deepEqual(await cluster.standing(quotaToken.id), { used: billedByResponses, reserved: 0 });
  assert.equal(billedByResponses, 20, 'every image of the quota was spent, none twice');
  t.diagnostic(
    `quota: ${quotaOutcomes.filter((o) => o.status === 200).length} of 45 requests served, ${billedByResponses} of 20 images billed`,
  );

  // 2. Rate: 36 requests at once through all three nodes against 12 per minute.
  const rateToken = await cluster.token({ requestsPerMinute: 12 });
  const started = Date.now();
  const rateOutcomes = await fire(rateToken, 'rate', 36, body(MODEL_A, { n: 1, size: '768*768' }));
  const elapsed = Date.now() - started;
  const admitted = rateOutcomes.filter((outcome) => outcome.status === 200).length;
  // GCRA admits the limit at once and one more per 5 s (60 s / 12) after that.
  assert.ok(admitted >= 12 && admitted <= 12 + Math.ceil(elapsed / 5000), `admitted ${admitted}`);
  t.diagnostic(`rate: ${admitted} of 36 admitted against 12/min across 3 nodes in ${elapsed} ms`);
  const throttled = rateOutcomes.find((outcome) => outcome.status === 429);
  assert.equal(throttled?.code, 'Throttling.RateQuota');
  assert.equal(throttled?.headers?.get('ratelimit-limit'), '12');
  assert.equal(throttled?.headers?.get('ratelimit-remaining'), '0');
  assert.ok(Number(throttled?.headers?.get('retry-after')) >= 1);

  // 3. Kill a node (SIGKILL) while it is generating.
  const killToken = await cluster.token({ imageQuota: 200, maxConcurrent: 30 });
  const victim = nodes[2] as GatewayProcess;
  const slow = body(MODEL_A, { n: 4, size: '2K' });
  let killed = false;
  const killOutcomes = await Promise.all(
    Array.from({ length: 18 }, async (_, index) => {
      const outcome = await generate(
        nodes[nodeFor(index)] as GatewayProcess,
        nodeFor(index),
        killToken.authorization,
        `kill-${index}`,
        slow,
      );
      if (outcome.node === 2 && outcome.status === 200 && !killed) {
        killed = true;
        victim.child.kill('SIGKILL');
      }
      return outcome;
    }),
  );
  if (!killed) victim.child.kill('SIGKILL');
  assert.equal(await victim.exited, null, 'the node died by the signal');
  const lost = killOutcomes.filter((outcome) => outcome.status === 'connection lost');
  assert.ok(lost.length > 0, 'some requests were cut off mid-generation');

  t.diagnostic(
    `kill: ${killOutcomes.filter((o) => o.node === 2 && o.status === 200).length} completed on the killed node, ${lost.length} cut off`,
  );
  const killedAt = Date.now();
  // Its reservations and concurrency slots expire; the surviving nodes reclaim them.
  await eventually(
    async () => (await cluster.standing(killToken.id)).reserved === 0,
    4 * RESERVATION_TTL_MS,
    'reservations of the dead node reclaimed',
  );
  await eventually(
    async () =>
      (await cluster.redis.exists(`${cluster.redisPrefix}slots:concurrency:${killToken.id}`)) === 0,
    4 * RESERVATION_TTL_MS,
    'concurrency slots of the dead node expired',
  );

  t.diagnostic(
    `dead node's reservations and slots freed ${Date.now() - killedAt} ms after the kill`,
  );

  // 4. Graceful stop of the survivors flushes their ledgers.
  for (const node of nodes.slice(0, 2)) node.child.kill('SIGTERM');
  assert.deepEqual(await Promise.all(nodes.slice(0, 2).map((node) => node.exited)), [0, 0]);

  for (const [token, outcomes] of [
    [quotaToken, quotaOutcomes],
    [rateToken, rateOutcomes],
  ] as const) {
    const rows = await ledgerOf(database, token.id);
    assert.deepEqual(
      rows.map((row) => row.requestId).sort(),
      outcomes.map((outcome) => outcome.requestId).sort(),
      'exactly one ledger row per request',
    );
    const byRequest = new Map(rows.map((row) => [row.requestId, row]));
    for (const outcome of outcomes) {
      const row = byRequest.get(outcome.requestId);
      assert.equal(row?.status, outcome.status);
      assert.equal(row?.imagesDelivered, outcome.imageCount);
      assert.equal(row?.imagesBilled, outcome.imageCount);
      assert.equal(row?.errorCode, outcome.code);
    }
    assert.equal(
      rows.reduce((total, row) => total + row.imagesBilled, 0),
      sum(outcomes),
      'ledger totals equal what the responses reported',
    );
  }
  assert.equal(
    (await ledgerOf(database, quotaToken.id)).reduce((total, row) => total + row.costMicros, 0),
    20 * 20_000,
    'cost at the configured price',
  );

  const killRows = await ledgerOf(database, killToken.id);
  const recorded = new Set(killRows.map((row) => row.requestId));
  for (const outcome of killOutcomes.filter((each) => each.status === 200))
    assert.ok(recorded.has(outcome.requestId), `completed ${outcome.requestId} has its ledger row`);
  assert.equal(
    new Set(killRows.map((row) => row.requestId)).size,
    killRows.length,
    'no request twice',
  );
  // A request admitted on the killed node keeps a row too: its reclaimed reservation leaves one.
  const lostIds = new Set(lost.map((outcome) => outcome.requestId));
  const abandoned = killRows.filter((row) => row.errorCode === 'Abandoned');
  assert.ok(abandoned.length > 0, 'requests cut off after admission are recorded as abandoned');
  for (const row of abandoned) {
    assert.ok(lostIds.has(row.requestId), `${row.requestId} was really cut off`);
    assert.equal(row.status, 0);
    assert.equal(row.imagesBilled, 0);
  }
  t.diagnostic(
    `kill: ${killRows.length} ledger rows for ${killOutcomes.length} requests (${killRows.filter((row) => row.status === 200).length} billed)`,
  );
  const { used, reserved } = await cluster.standing(killToken.id);
  assert.equal(reserved, 0, 'no quota leaked');
  assert.equal(
    used,
    killRows.reduce((total, row) => total + row.imagesBilled, 0),
    'quota used equals what the ledger billed',
  );
});
