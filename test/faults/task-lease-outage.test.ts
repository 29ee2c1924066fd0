import assert from 'node:assert/strict';
import { it } from 'node:test';
import { MODEL_B } from '../../src/domain/models.js';
import { createTaskStore } from '../../src/store/task-store.js';
import { startFakeDashScope } from '../fixtures/fake-dashscope.js';
import { DashScopeSdk } from '../helpers/dashscope-sdk.js';
import { dashScopeChannelEnv, eventually, nodeEnv, openBooks, startNodes } from './fault-rig.js';
import { throwawayPostgres } from './throwaway-postgres.js';

const TASKS = 4;
/** The shortest lease the setting allows: renewed every third of a second. */
const LEASE_MS = 1000;
/** The upstream is still generating when the database is back. */
const UPSTREAM_MS = 6000;

it('a PostgreSQL outage (stop, start) while tasks run upstream: their runners keep their leases, and every task succeeds and bills once', async (t) => {
  const cluster = await throwawayPostgres(t);
  if (cluster === undefined) return;
  const fake = await startFakeDashScope();
  t.after(() => fake.close());
  const books = await openBooks(t, { kind: 'postgres', url: cluster.url });
  const [node] = await startNodes(
    t,
    1,
    nodeEnv(books, {
      IMAGEGATE_DATABASE_URL: cluster.url,
      IMAGEGATE_TASK_CONCURRENCY: String(TASKS),
      IMAGEGATE_TASK_LEASE_MS: String(LEASE_MS),
      IMAGEGATE_TASK_POLL_MS: '100',
      ...(await dashScopeChannelEnv(t, fake)),
    }),
  );
  assert.ok(node !== undefined);
  const quota = await books.token({ imageQuota: 100 });
  const sdk = new DashScopeSdk(`${node.url}/vendor/api/v1`, quota.authorization.slice(7));
  const ids: string[] = [];
  for (let i = 0; i < TASKS; i++) {
    fake.script({ kind: 'succeed', images: 1, imageCount: 1, delayMs: UPSTREAM_MS });
    const messages = [{ role: 'user', content: [{ text: `task ${i}` }] }];
    ids.push(String((await sdk.asyncCall(MODEL_B, messages)).output?.task_id));
  }
  await eventually(() => fake.submissions().length === TASKS, 20_000, 'every task is upstream');

  const tasks = createTaskStore('postgres', books.database.db);
  const leases = async () =>
    (await Promise.all(ids.map(async (id) => tasks.find(id)))).map((task) => task?.leaseUntil ?? 0);
  const lapseAt = Math.max(...(await leases()));
  const stoppedAt = Date.now();
  await cluster.stop();
  // The fault itself: the database stays away until the leases it last recorded have run out,
  // as the clock reads them or as the node finds when it gives up renewing them (a node that
  // never says so, as before the renewals were retried, is judged by the clock alone).
  await eventually(
    () =>
      Date.now() > lapseAt ||
      node.stdout().includes('renewing task leases failed until they ran out'),
    20_000,
    'the leases run out',
  );
  await cluster.start();
  t.diagnostic(`the database was down for ${Date.now() - stoppedAt} ms`);

  const ended = async () => Promise.all(ids.map(async (id) => tasks.find(id)));
  await eventually(
    async () =>
      (await ended()).every((task) => task?.state !== 'PENDING' && task?.state !== 'RUNNING'),
    30_000,
    'every task ends',
  );
  const endings = (await ended()).map((task) => `${task?.state} ${task?.errorMessage ?? ''}`);
  assert.deepEqual(endings, Array(TASKS).fill('SUCCEEDED '));
  const rows = await books.rows(quota.id);
  assert.deepEqual(
    rows.map((row) => `${row.status} billed ${row.imagesBilled}`),
    Array(TASKS).fill('200 billed 1'),
  );
  assert.deepEqual(await books.standing(quota.id), { used: TASKS, reserved: 0 });
  assert.equal(fake.submissions().length, TASKS, 'no task reached the upstream twice');
});
