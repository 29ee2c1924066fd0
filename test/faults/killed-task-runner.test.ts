import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { MODEL_B } from '../../src/domain/models.js';
import type { DatabaseTarget } from '../../src/store/database/database.js';
import { createTaskStore } from '../../src/store/task-store.js';
import { startFakeDashScope } from '../fixtures/fake-dashscope.js';
import { DashScopeSdk } from '../helpers/dashscope-sdk.js';
import { postgresTarget } from '../helpers/postgres.js';
import type { GatewayProcess } from '../scale-out/gateway-process.js';
import {
  dashScopeChannelEnv,
  eventually,
  nodeDatabaseUrl,
  nodeEnv,
  openBooks,
  restartableNode,
} from './fault-rig.js';

const LEASE_MS = 1500;
const POLL_MS = 100;
const messages = (text: string) => [{ role: 'user', content: [{ text }] }];

/** Node processes on one database: SQLite shares a data dir, PostgreSQL a schema. */
async function deployment(t: TestContext, kind: 'sqlite' | 'postgres') {
  const node = await restartableNode(t);
  const directory = node.directory;
  const target: DatabaseTarget | undefined =
    kind === 'sqlite'
      ? { kind: 'sqlite', file: path.join(directory, 'imagegate.db') }
      : await postgresTarget(t);
  if (target === undefined) return undefined;
  const books = await openBooks(t, target);
  const fake = await startFakeDashScope();
  t.after(() => fake.close());
  const env = nodeEnv(books, {
    ...(target.kind === 'postgres' ? { IMAGEGATE_DATABASE_URL: nodeDatabaseUrl(target) } : {}),
    IMAGEGATE_TASK_CONCURRENCY: '1',
    IMAGEGATE_TASK_LEASE_MS: String(LEASE_MS),
    IMAGEGATE_TASK_POLL_MS: String(POLL_MS),
    ...(await dashScopeChannelEnv(t, fake)),
  });
  const start = () => node.start(env);
  return { books, fake, start, tasks: createTaskStore(target.kind, books.database.db) };
}

for (const kind of ['sqlite', 'postgres'] as const) {
  describe(`a gateway process killed (SIGKILL) with tasks running and pending (${kind})`, () => {
    it('after a restart, the running task ends FAILED within the lease, unbilled and never re-sent; the pending one runs once', async (t) => {
      const rig = await deployment(t, kind);
      if (rig === undefined) return;
      const { books, fake } = rig;
      const quota = await books.token({ imageQuota: 10 });
      const token = quota.authorization.slice('Bearer '.length);
      fake.script({ kind: 'hang' }, { kind: 'succeed', images: 1, imageCount: 1 });

      const first = await rig.start();
      const sdk = new DashScopeSdk(`${first.url}/vendor/api/v1`, token);
      const running = String((await sdk.asyncCall(MODEL_B, messages('hangs'))).output?.task_id);
      await eventually(() => fake.submissions().length === 1, 10_000, 'the task reaches upstream');
      const pending = String((await sdk.asyncCall(MODEL_B, messages('waits'))).output?.task_id);
      assert.equal((await rig.tasks.find(pending))?.state, 'PENDING');
      // The answer is out before the hand-over that lets a node claim the task is recorded; a kill
      // in between would cancel the task, which is not what this test is about.
      await eventually(
        async () => (await rig.tasks.find(pending))?.leaseUntil === undefined,
        10_000,
        'the pending task handed over',
      );
      first.child.kill('SIGKILL');
      await first.exited;

      const second = await rig.start();
      const restartedAt = Date.now();
      const sdkAgain = new DashScopeSdk(`${second.url}/vendor/api/v1`, token);
      const failed = await sdkAgain.wait(running, 20_000);
      assert.equal(failed.output?.task_status, 'FAILED');
      assert.equal(failed.output?.code, 'InternalError');
      assert.match(String(failed.output?.message), /nothing was billed/);
      // Once a node runs, the lease and a poll bound the recovery (with room for a busy machine).
      const recoveryMs = Date.now() - restartedAt;
      assert.ok(recoveryMs < LEASE_MS + 5000, `recovered after ${recoveryMs} ms`);
      assert.equal((await sdkAgain.wait(pending, 20_000)).output?.task_status, 'SUCCEEDED');

      assert.equal(fake.submissions().length, 2, 'each task reached the upstream once');
      const rows = await books.rows(quota.id);
      assert.equal(rows.length, 2);
      const byStatus = rows.map((row) => [row.status, row.errorCode, row.imagesBilled]).sort();
      assert.deepEqual(byStatus, [
        [200, undefined, 1],
        [500, 'InternalError', 0],
      ]);
      assert.deepEqual(await books.standing(quota.id), { used: 1, reserved: 0 });
      second.child.kill('SIGTERM');
      assert.equal(await second.exited, 0);
    });
  });
}

it('two nodes on PostgreSQL: every task is claimed and run by exactly one of them', async (t) => {
  const rig = await deployment(t, 'postgres');
  if (rig === undefined) return;
  const { books, fake } = rig;
  const quota = await books.token({ imageQuota: 100 });
  const token = quota.authorization.slice('Bearer '.length);
  const nodes = [await rig.start(), await rig.start()];
  const ids: string[] = [];
  for (let i = 0; i < 12; i++) {
    const node = nodes[i % 2] as GatewayProcess;
    const sdk = new DashScopeSdk(`${node.url}/vendor/api/v1`, token);
    ids.push(String((await sdk.asyncCall(MODEL_B, messages(`task ${i}`))).output?.task_id));
  }
  const sdk = new DashScopeSdk(`${(nodes[0] as GatewayProcess).url}/vendor/api/v1`, token);
  const runners = new Set<string>();
  for (const id of ids) {
    assert.equal((await sdk.wait(id, 30_000)).output?.task_status, 'SUCCEEDED');
    runners.add(String((await rig.tasks.find(id))?.runner));
  }
  assert.equal(fake.submissions().length, ids.length, 'no task reached the upstream twice');
  const rows = await books.rows(quota.id);
  assert.equal(rows.length, ids.length);
  assert.ok(rows.every((row) => row.status === 200 && row.imagesBilled === 1));
  assert.deepEqual(await books.standing(quota.id), { used: ids.length, reserved: 0 });
  assert.ok(runners.size >= 1);
});
