import assert from 'node:assert/strict';
import { it, type TestContext } from 'node:test';
import { MODEL_B } from '../../src/domain/models.js';
import { eventually } from '../faults/fault-rig.js';
import { postgresTarget } from '../helpers/postgres.js';
import {
  everyCallerLeft,
  everyTask,
  lockRows,
  someoneWaitsOn,
  submissionRig,
} from './submission-rig.js';

const CALLERS = 5;
const IMAGES = 2;

/** A gateway on PostgreSQL with a DashScope channel, and a caller's token with a quota. */
async function deployment(t: TestContext) {
  const target = await postgresTarget(t);
  if (target?.kind !== 'postgres') return undefined;
  return submissionRig(t, target);
}

/** Sends a task submission that its caller abandons when `leave` is aborted. */
function submit(
  url: string,
  token: string,
  leave: AbortSignal,
  idempotencyKey?: string,
): Promise<number | 'left'> {
  return fetch(`${url}/vendor/api/v1/services/aigc/image-generation/generation`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      'x-dashscope-async': 'enable',
      ...(idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey }),
    },
    body: JSON.stringify({
      model: MODEL_B,
      input: { messages: [{ role: 'user', content: [{ text: 'a harbour at dawn' }] }] },
      parameters: { n: IMAGES },
    }),
    signal: leave,
  }).then(
    (response) => response.status,
    () => 'left' as const,
  );
}

it('task submissions whose callers leave while the quota row is locked: no task runs, nothing is billed, each gets a 499 CallerGone row', async (t) => {
  const rig = await deployment(t);
  if (rig === undefined) return;
  const { gateway, url, token, tokenId } = rig;
  const quotaRow = await rig.locker();
  await lockRows(quotaRow, 'select id from tokens where id = $1', [tokenId]);
  const leave = new AbortController();
  const answers = Array.from({ length: CALLERS }, () => submit(url, token, leave.signal));
  await someoneWaitsOn(quotaRow, 'a reservation waits on the locked row');
  leave.abort();
  assert.deepEqual(await Promise.all(answers), Array(CALLERS).fill('left'));
  await everyCallerLeft(gateway);
  await quotaRow.query('commit');

  await checkNothingBilled(rig, CALLERS);
  assert.equal((await gateway.tasks.store.list(everyTask(), 0, 100)).length, 0, 'no task stored');
});

it('a task stored just as its caller left (the Idempotency-Key publication held up): canceled CallerGone unbilled, and a repeat with the key runs again', async (t) => {
  const rig = await deployment(t);
  if (rig === undefined) return;
  const { gateway, fake, url, token, tokenId } = rig;
  const quotaRow = await rig.locker();
  const keyRow = await rig.locker();
  await lockRows(quotaRow, 'select id from tokens where id = $1', [tokenId]);
  const leave = new AbortController();
  const key = 'submission-left-after-its-insert';
  const answer = submit(url, token, leave.signal, key);
  await someoneWaitsOn(quotaRow, 'the reservation waits on the locked row');
  await lockRows(keyRow, 'select scope from idempotency_keys where idempotency_key = $1', [key]);
  await quotaRow.query('commit');
  await someoneWaitsOn(keyRow, "the task's insert waits to publish it under its key");
  leave.abort();
  assert.equal(await answer, 'left');
  await everyCallerLeft(gateway);
  await keyRow.query('commit');

  await checkNothingBilled(rig, 1);
  const [task] = await gateway.tasks.store.list(everyTask(), 0, 100);
  assert.equal(task?.state, 'CANCELED');
  assert.equal(task.errorCode, 'CallerGone');
  assert.equal(fake.submissions().length, 0);

  const again = await submit(url, token, new AbortController().signal, key);
  assert.equal(again, 200);
  const tasks = async () => gateway.tasks.store.list(everyTask(), 0, 100);
  await eventually(
    async () => (await tasks()).some((found) => found.state === 'SUCCEEDED'),
    30_000,
    'the repeat runs',
  );
  assert.equal((await tasks()).length, 2);
});

/** Every submission has its 499 CallerGone row, nothing is billed, reserved, queued or sent. */
async function checkNothingBilled(
  rig: NonNullable<Awaited<ReturnType<typeof deployment>>>,
  submissions: number,
) {
  const { gateway, fake, tokenId } = rig;
  const store = gateway.tasks.store;
  const settled = async () => {
    const rows = await gateway.admission.usage.list({ tokenId }, 100);
    const limits = await gateway.admission.limits.find(tokenId);
    const open = (await store.list(everyTask(), 0, 100)).filter(
      (task) => task.state === 'PENDING' || task.state === 'RUNNING',
    );
    return rows.length === submissions && limits?.imagesReserved === 0 && open.length === 0;
  };
  await eventually(settled, 30_000, 'every submission has its row, nothing reserved or queued');
  const rows = await gateway.admission.usage.list({ tokenId }, 100);
  const billed = rows.reduce((sum, row) => sum + row.imagesBilled, 0);
  const delivered = rows.reduce((sum, row) => sum + row.imagesDelivered, 0);
  assert.deepEqual(
    { billed, delivered, upstreamCalls: fake.submissions().length },
    { billed: 0, delivered: 0, upstreamCalls: 0 },
  );
  for (const row of rows) {
    assert.equal(row.status, 499);
    assert.equal(row.errorCode, 'CallerGone');
  }
  assert.equal((await gateway.admission.limits.find(tokenId))?.imagesUsed, 0);
  return rows;
}
