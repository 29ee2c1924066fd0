import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { it, type TestContext } from 'node:test';
import { MODEL_A } from '../../src/domain/models.js';
import { createTaskStore } from '../../src/store/task-store.js';
import { startFakeDashScope } from '../fixtures/fake-dashscope.js';
import { DashScopeSdk } from '../helpers/dashscope-sdk.js';
import { postgresTarget } from '../helpers/postgres.js';
import { makePng } from '../inputs/image-fixtures.js';
import { bytesHandler, startImageServer } from '../inputs/image-server.js';
import {
  dashScopeChannelEnv,
  eventually,
  nodeDatabaseUrl,
  nodeEnv,
  openBooks,
  startNodes,
} from './fault-rig.js';

const LEASE_MS = 1500;
const ENDED_ELSEWHERE = {
  rows: ['500 InternalError billed 0'],
  task: 'FAILED InternalError',
  standing: { used: 0, reserved: 0 },
};

/**
 * Two nodes on one PostgreSQL schema: the first runs tasks, the second runs none and only ends
 * the tasks whose runner's lease lapsed. Input images come from the test's image server.
 */
async function deployment(t: TestContext) {
  const target = await postgresTarget(t);
  if (target?.kind !== 'postgres') return undefined;
  const books = await openBooks(t, target);
  const fake = await startFakeDashScope();
  t.after(() => fake.close());
  const images = await startImageServer();
  t.after(() => images.close());
  const common = nodeEnv(books, {
    IMAGEGATE_DATABASE_URL: nodeDatabaseUrl(target),
    IMAGEGATE_TASK_LEASE_MS: String(LEASE_MS),
    IMAGEGATE_TASK_POLL_MS: '100',
    IMAGEGATE_ALLOW_PRIVATE_IMAGE_URLS: 'true',
    ...(await dashScopeChannelEnv(t, fake)),
  });
  const [runner] = await startNodes(t, 1, { ...common, IMAGEGATE_TASK_CONCURRENCY: '1' });
  await startNodes(t, 1, { ...common, IMAGEGATE_TASK_CONCURRENCY: '0' });
  assert.ok(runner !== undefined);
  const tasks = createTaskStore('postgres', books.database.db);
  const quota = await books.token({ imageQuota: 10 });
  const sdk = new DashScopeSdk(`${runner.url}/vendor/api/v1`, quota.authorization.slice(7));
  const submit = async (image: string) =>
    String(
      (
        await sdk.asyncCall(MODEL_A, [
          { role: 'user', content: [{ image }, { text: 'repaint it' }] },
        ])
      ).output?.task_id,
    );
  /** Stops the runner, waits for the other node to end the task, and checks its ending. */
  const stallUntilEndedElsewhere = async (taskId: string) => {
    runner.child.kill('SIGSTOP');
    await eventually(
      async () =>
        (await tasks.find(taskId))?.state === 'FAILED' &&
        (await books.standing(quota.id)).reserved === 0,
      20_000,
      'the other node ends the task once its lease lapsed, giving its reservation back',
    );
    const [failedRow] = await books.rows(quota.id);
    assert.equal(failedRow?.status, 500);
    assert.equal(failedRow.errorCode, 'InternalError');
    assert.equal((await books.standing(quota.id)).used, 0);
  };
  /** What the upstream, the ledger, the task and the token say after the runner resumed. */
  const afterwards = async (taskId: string) => {
    await eventually(
      async () => (await books.standing(quota.id)).reserved === 0,
      20_000,
      'nothing stays reserved',
    );
    const rows = await books.rows(quota.id);
    const task = await tasks.find(taskId);
    return {
      upstreamCalls: fake.submissions().length,
      rows: rows.map((row) => `${row.status} ${row.errorCode} billed ${row.imagesBilled}`),
      task: `${task?.state} ${task?.errorCode}`,
      standing: await books.standing(quota.id),
    };
  };
  return { fake, images, runner, submit, stallUntilEndedElsewhere, afterwards };
}

it("a runner stalled (SIGSTOP) while loading a task's input image, whose task another node ended FAILED, neither reserves nor calls the upstream when it resumes, and the task's row is not rewritten", async (t) => {
  const rig = await deployment(t);
  if (rig === undefined) return;
  const png = await makePng(256, 256);
  const stalled: ServerResponse[] = [];
  const input = rig.images.serve('/input.png', (_request, response) => {
    stalled.push(response);
  });
  const taskId = await rig.submit(input);
  await eventually(() => stalled.length === 1, 20_000, 'the runner loads the input image');
  await rig.stallUntilEndedElsewhere(taskId);

  for (const response of stalled) response.writeHead(200, { 'content-type': 'image/png' }).end(png);
  rig.runner.child.kill('SIGCONT');
  await eventually(
    () => rig.fake.submissions().length > 0 || rig.runner.logs().includes('not run further'),
    20_000,
    'the resumed runner is done with the task',
  );
  assert.deepEqual(await rig.afterwards(taskId), { upstreamCalls: 0, ...ENDED_ELSEWHERE });
});

it("a runner stalled (SIGSTOP) during its upstream call, whose task another node ended FAILED, bills nothing when the answer comes and leaves the task's row as the ending wrote it", async (t) => {
  const rig = await deployment(t);
  if (rig === undefined) return;
  const input = rig.images.serve('/input.png', bytesHandler(await makePng(256, 256)));
  rig.fake.script({ kind: 'succeed', images: 1, imageCount: 1, delayMs: 1000 });
  const taskId = await rig.submit(input);
  await eventually(() => rig.fake.submissions().length === 1, 20_000, 'the task is upstream');
  await rig.stallUntilEndedElsewhere(taskId);

  rig.runner.child.kill('SIGCONT');
  await eventually(
    () => rig.runner.logs().includes('task failed'),
    20_000,
    'the resumed runner is refused its settlement',
  );
  assert.deepEqual(await rig.afterwards(taskId), { upstreamCalls: 1, ...ENDED_ELSEWHERE });
});
