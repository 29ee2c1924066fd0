import assert from 'node:assert/strict';
import { it } from 'node:test';
import { MODEL_A } from '../../src/domain/models.js';
import { startFakeDashScope } from '../fixtures/fake-dashscope.js';
import { postgresTarget } from '../helpers/postgres.js';
import { redisTarget } from '../helpers/redis.js';
import {
  billedIn,
  dashScopeChannelEnv,
  eventually,
  type FaultNode,
  generate,
  generationBody,
  nodeDatabaseUrl,
  nodeEnv,
  openBooks,
  type Outcome,
  startNodes,
  stopGracefully,
} from './fault-rig.js';

const RESERVATION_TTL_MS = 3000;
const IMAGES = 2;
/** Long enough for node A to be stopped while every one of its requests waits on the upstream. */
const UPSTREAM_DELAY_MS = 1500;
/** The impatient clients give up on node A after this and retry on node B. */
const CLIENT_TIMEOUT_MS = 2500;
const KEYS = ['key-0', 'key-1', 'key-2'];
/** Its client keeps the connection to A open while retrying on B: A answers it once resumed. */
const PATIENT_KEY = 'key-patient';

it('a node stalled (SIGSTOP) mid-request: retries with the same Idempotency-Key on another node are billed once, the stalled node bills nothing when it resumes, and other tokens are served meanwhile', async (t) => {
  const target = await postgresTarget(t);
  const redis = await redisTarget(t);
  if (target === undefined || target.kind !== 'postgres' || redis === undefined) return;
  const fake = await startFakeDashScope();
  t.after(() => fake.close());
  const books = await openBooks(t, target);
  const [a, b] = (await startNodes(
    t,
    2,
    nodeEnv(books, {
      IMAGEGATE_DATABASE_URL: nodeDatabaseUrl(target),
      IMAGEGATE_REDIS_URL: redis.url,
      IMAGEGATE_REDIS_KEY_PREFIX: redis.prefix,
      IMAGEGATE_RESERVATION_TTL_MS: String(RESERVATION_TTL_MS),
      ...(await dashScopeChannelEnv(t, fake)),
    }),
  )) as [FaultNode, FaultNode];
  const quota = await books.token({ imageQuota: 20 });
  const unlimited = await books.token();
  const body = (key: string) => generationBody(MODEL_A, IMAGES, `a lighthouse for ${key}`);
  const request = (node: FaultNode, key: string, requestId: string, timeoutMs?: number) =>
    generate(node.url, {
      authorization: quota.authorization,
      body: body(key),
      requestId,
      idempotencyKey: key,
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
    });

  // 1. Requests reach the upstream through node A, which is then stopped.
  const allKeys = [...KEYS, PATIENT_KEY];
  fake.script(
    ...allKeys.map(() => ({
      kind: 'succeed' as const,
      images: IMAGES,
      imageCount: IMAGES,
      delayMs: UPSTREAM_DELAY_MS,
    })),
  );
  const onA = KEYS.map((key) => request(a, key, `a-${key}`, CLIENT_TIMEOUT_MS));
  const patientOnA = request(a, PATIENT_KEY, `a-${PATIENT_KEY}`, 60_000);
  await eventually(
    () => fake.submissions().length === allKeys.length,
    10_000,
    'every request of node A waits on the upstream',
  );
  a.child.kill('SIGSTOP');
  const stoppedAt = Date.now();
  t.after(() => void a.child.kill('SIGCONT'));

  // 2. Meanwhile node B serves a token without limits at once: nothing of A's blocks it.
  fake.script({ kind: 'succeed', images: 1, imageCount: 1 });
  const unlimitedOutcome = await generate(b.url, {
    authorization: unlimited.authorization,
    body: generationBody(MODEL_A, 1),
    requestId: 'b-unlimited',
  });
  t.diagnostic(`token without limits on B while A is stopped: ${unlimitedOutcome.ms} ms`);
  assert.equal(unlimitedOutcome.status, 200);
  assert.ok(unlimitedOutcome.ms < 2000, `took ${unlimitedOutcome.ms} ms`);

  // 3. The impatient clients time out and retry the same key and body on node B, which waits
  // for A's claims to lapse, takes them over and generates.
  const timedOut = await Promise.all(onA);
  assert.deepEqual(
    timedOut.map((outcome) => outcome.status),
    KEYS.map(() => 'timed out'),
  );
  fake.script(
    ...allKeys.map(() => ({ kind: 'succeed' as const, images: IMAGES, imageCount: IMAGES })),
  );
  const retries = await Promise.all(allKeys.map((key) => request(b, key, `b-${key}`, 30_000)));
  t.diagnostic(
    `retries on B answered ${retries.map((o) => o.status).join(', ')} after ${retries
      .map((o) => o.ms)
      .join(', ')} ms (A stopped ${Date.now() - stoppedAt} ms ago)`,
  );
  for (const retry of retries) {
    assert.equal(retry.status, 200, `${retry.requestId}: ${retry.code}`);
    assert.equal(retry.imageUrls.length, IMAGES);
  }

  // 4. A's reservations lapse and are reclaimed, each leaving its stand-in row.
  await eventually(
    async () => (await books.standing(quota.id)).reserved === 0,
    4 * RESERVATION_TTL_MS,
    "node A's reservations reclaimed",
  );
  const standIns = (await books.rows(quota.id)).filter((row) => row.requestId.startsWith('a-'));
  assert.deepEqual(
    standIns
      .map((row) => `${row.requestId} ${row.status} ${row.errorCode} ${row.imagesBilled}`)
      .sort(),
    allKeys.map((key) => `a-${key} 0 Abandoned 0`).sort(),
  );

  // 5. A resumes: its requests' leases are gone, so it bills and delivers nothing.
  a.child.kill('SIGCONT');
  const patient = await patientOnA;
  t.diagnostic(`the patient client on A got ${patient.status} ${patient.code} once A resumed`);
  assert.equal(patient.status, 503);
  assert.equal(patient.code, 'Overloaded');
  assert.equal(patient.headers?.get('retry-after'), '1');
  assert.deepEqual(patient.imageUrls, []);

  // 6. A repeat of each key, on either node, replays B's images.
  const replays: Outcome[] = [];
  for (const [index, key] of allKeys.entries()) {
    const node = index % 2 === 0 ? a : b;
    const replay = await request(node, key, `replay-${key}`);
    replays.push(replay);
    const retry = retries[index] as Outcome;
    assert.equal(replay.status, 200, `${key}: ${replay.code}`);
    assert.equal(replay.headers?.get('idempotent-replayed'), 'true');
    assert.deepEqual(replay.imageUrls, retry.imageUrls, `${key} replays the same images`);
    assert.equal(replay.bodyRequestId, `b-${key}`, `${key} names the request that generated`);
  }
  assert.ok(a.alive() && b.alive(), 'no node exited');

  // 7. The books, exactly: each key billed once (by B), nothing by A, nothing by the replays.
  await stopGracefully([a, b]);
  const rows = await books.rows(quota.id);
  const byRequest = new Map(rows.map((row) => [row.requestId, row]));
  assert.equal(byRequest.size, rows.length, 'no request has two rows');
  assert.deepEqual(
    [...byRequest.keys()].sort(),
    allKeys.flatMap((key) => [`a-${key}`, `b-${key}`, `replay-${key}`]).sort(),
  );
  const endings: string[] = [];
  for (const key of allKeys) {
    const first = byRequest.get(`a-${key}`);
    const retry = byRequest.get(`b-${key}`);
    const replay = byRequest.get(`replay-${key}`);
    assert.ok(first !== undefined && retry !== undefined && replay !== undefined);
    endings.push(`${key}: ${first.status} ${first.errorCode}`);
    assert.equal(first.imagesBilled, 0);
    assert.equal(first.imagesDelivered, 0);
    assert.equal(first.costMicros, 0);
    // Stalled past its lease: its settlement found the lease gone (LeaseLost), or it never
    // settled because its caller had left (CallerGone, replacing the reclaimed stand-in).
    if (key === PATIENT_KEY) assert.deepEqual([first.status, first.errorCode], [503, 'LeaseLost']);
    else
      assert.ok(
        (first.status === 503 && first.errorCode === 'LeaseLost') ||
          (first.status === 499 && first.errorCode === 'CallerGone'),
        `a-${key}: ${first.status} ${first.errorCode}`,
      );
    assert.deepEqual(
      [retry.status, retry.imagesDelivered, retry.imagesBilled, retry.replayed],
      [200, IMAGES, IMAGES, false],
    );
    assert.deepEqual(
      [replay.status, replay.imagesDelivered, replay.imagesBilled, replay.replayed],
      [200, IMAGES, 0, true],
    );
  }
  t.diagnostic(`rows of A's stalled requests: ${endings.join('; ')}`);
  const delivered = retries.reduce((total, outcome) => total + outcome.imageUrls.length, 0);
  assert.equal(delivered, allKeys.length * IMAGES);
  assert.equal(billedIn(rows), delivered);
  assert.deepEqual(await books.standing(quota.id), { used: delivered, reserved: 0 });
  const unlimitedRows = await books.rows(unlimited.id);
  assert.deepEqual(
    unlimitedRows.map((row) => [row.requestId, row.status, row.imagesBilled]),
    [['b-unlimited', 200, 1]],
  );
  assert.deepEqual(await books.standing(unlimited.id), { used: 1, reserved: 0 });
});
