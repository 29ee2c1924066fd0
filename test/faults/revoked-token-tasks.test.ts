import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { MODEL_B } from '../../src/domain/models.js';
import { createTaskStore } from '../../src/store/task-store.js';
import { deriveKeys } from '../../src/auth/keys.js';
import { TokenIssuer } from '../../src/auth/token-issuer.js';
import { SqlTokenStore } from '../../src/store/token-store.js';
import { startFakeDashScope } from '../fixtures/fake-dashscope.js';
import { DashScopeSdk } from '../helpers/dashscope-sdk.js';
import {
  dashScopeChannelEnv,
  eventually,
  nodeEnv,
  openBooks,
  restartableNode,
  type SharedBooks,
} from './fault-rig.js';

const TASKS = 5;
const messages = (text: string) => [{ role: 'user', content: [{ text }] }];

/** One data directory; the first node runs no tasks, so the ones submitted to it wait PENDING. */
async function deployment(t: TestContext) {
  const node = await restartableNode(t);
  const books = await openBooks(t, {
    kind: 'sqlite',
    file: path.join(node.directory, 'imagegate.db'),
  });
  const fake = await startFakeDashScope();
  t.after(() => fake.close());
  const channel = await dashScopeChannelEnv(t, fake);
  const start = (concurrency: number) =>
    node.start(
      nodeEnv(books, {
        IMAGEGATE_TASK_CONCURRENCY: String(concurrency),
        IMAGEGATE_TASK_POLL_MS: '100',
        ...channel,
      }),
    );
  return { books, fake, start, tasks: createTaskStore('sqlite', books.database.db) };
}

/**
 * Submits TASKS tasks to a node that runs none, lets `spoil` end the token's standing, then
 * restarts the node with a runner and checks that every task ended FAILED, unbilled, unsent.
 */
async function submitSpoilAndRestart(
  t: TestContext,
  spoil: (books: SharedBooks, tokenId: string) => Promise<void>,
  reason: RegExp,
): Promise<void> {
  const rig = await deployment(t);
  const { books, fake } = rig;
  const quota = await books.token({ imageQuota: 10 });
  const token = quota.authorization.slice('Bearer '.length);

  const idle = await rig.start(0);
  const sdk = new DashScopeSdk(`${idle.url}/vendor/api/v1`, token);
  const ids: string[] = [];
  for (let i = 0; i < TASKS; i++)
    ids.push(String((await sdk.asyncCall(MODEL_B, messages(`task ${i}`))).output?.task_id));
  for (const id of ids) assert.equal((await rig.tasks.find(id))?.state, 'PENDING');
  assert.deepEqual(await books.standing(quota.id), { used: 0, reserved: TASKS });
  await spoil(books, quota.id);
  idle.child.kill('SIGTERM');
  assert.equal(await idle.exited, 0);

  const runner = await rig.start(2);
  // The caller can no longer read its tasks (its token is refused), so the test reads the store.
  const ended = async () => Promise.all(ids.map(async (id) => rig.tasks.find(id)));
  await eventually(
    async () =>
      (await ended()).every((task) => task?.state !== 'PENDING' && task?.state !== 'RUNNING'),
    20_000,
    'every task ends',
  );
  for (const task of await ended()) {
    assert.equal(task?.state, 'FAILED');
    assert.equal(task.errorCode, 'InvalidApiKey');
    assert.match(String(task.errorMessage), reason);
    assert.match(String(task.errorMessage), /nothing was billed/);
  }
  assert.equal(fake.submissions().length, 0, 'no task reached the upstream');
  const rows = await books.rows(quota.id);
  assert.equal(rows.length, TASKS);
  for (const row of rows) {
    assert.equal(row.status, 401);
    assert.equal(row.errorCode, 'InvalidApiKey');
    assert.equal(row.imagesBilled, 0);
    assert.equal(row.imagesDelivered, 0);
    assert.equal(row.costMicros, 0);
  }
  assert.deepEqual(await books.standing(quota.id), { used: 0, reserved: 0 });
  // What a caller reads in the DashScope task shape (an admin here: the owner's token is refused).
  const { token: adminToken } = await new TokenIssuer(
    new SqlTokenStore(books.database.db),
    deriveKeys(books.secret).tokenSigning,
  ).issue({ name: 'admin', account: 'ops', admin: true, expiresInSeconds: undefined });
  const read = await new DashScopeSdk(`${runner.url}/vendor/api/v1`, adminToken).fetch(
    String(ids[0]),
  );
  assert.equal(read.output?.task_status, 'FAILED');
  assert.equal(read.output?.code, 'InvalidApiKey');
  assert.match(String(read.output?.message), reason);
  runner.child.kill('SIGTERM');
  assert.equal(await runner.exited, 0);
}

describe('tasks whose token lost its standing while they were queued', () => {
  it('a revoked token: its queued tasks end FAILED InvalidApiKey when claimed, nothing billed, reservations given back', async (t) => {
    await submitSpoilAndRestart(
      t,
      async (books, tokenId) => {
        assert.ok(await new SqlTokenStore(books.database.db).revoke(tokenId, Date.now()));
      },
      /revoked/,
    );
  });

  it('an expired token (expiry passed before the claim): the same', async (t) => {
    await submitSpoilAndRestart(
      t,
      async (books, tokenId) => {
        await books.database.db
          .updateTable('tokens')
          .set({ expires_at: Date.now() - 1000 })
          .where('id', '=', tokenId)
          .execute();
      },
      /expired/,
    );
  });
});
