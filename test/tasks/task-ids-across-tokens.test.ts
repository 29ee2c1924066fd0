import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { it } from 'node:test';
import { GENERATION_PATH, IMAGE_GENERATION_PATH, TASKS_PATH } from '../../src/domain/api-paths.js';
import { MODEL_B } from '../../src/domain/models.js';
import type { TaskRecord } from '../../src/domain/task.js';
import { eventually } from '../faults/fault-rig.js';
import { postgresTarget } from '../helpers/postgres.js';
import { everyTask, submissionRig, type SubmissionRig } from './submission-rig.js';

const IMAGES = 2;

/** An answer to a caller other than the task's owner: its status, and its body without request_id. */
interface Probe {
  status: number;
  body: unknown;
}

/** A POST of a generation of model B to `path`, with `headers` added. */
function requestText(token: string, path: string, headers: string[]): string {
  const body = JSON.stringify({
    model: MODEL_B,
    input: { messages: [{ role: 'user', content: [{ text: 'a harbour at dawn' }] }] },
    parameters: { n: IMAGES },
  });
  return [
    `POST ${path} HTTP/1.1`,
    'Host: 127.0.0.1',
    `Authorization: Bearer ${token}`,
    'Content-Type: application/json',
    ...headers,
    `Content-Length: ${Buffer.byteLength(body)}`,
    '',
    body,
  ].join('\r\n');
}

/**
 * One connection carrying two requests back to back: a synchronous generation by `first`, whose
 * upstream call the test holds, then the task submission by `owner`. Node answers a connection's
 * requests in order, so the submission's receipt waits behind the first answer: its task is
 * stored, held, and its receipt not yet handed over until the test lets the upstream answer.
 * Resolves with everything the connection received once the gateway closed it.
 */
function submissionBehindAStalledAnswer(
  port: number,
  first: string,
  owner: string,
  requestId: string,
): Promise<string> {
  const socket = connect(port, '127.0.0.1');
  let text = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => (text += chunk));
  socket.write(requestText(first, GENERATION_PATH, []));
  socket.write(
    requestText(owner, IMAGE_GENERATION_PATH, [
      'X-DashScope-Async: enable',
      `X-Request-Id: ${requestId}`,
      'Connection: close',
    ]),
  );
  return new Promise((resolve, reject) => {
    socket.once('error', reject);
    socket.once('close', () => resolve(text));
  });
}

/** What `token` is answered for GET and cancel of task `id`, the id itself written as `<id>`. */
async function probe(url: string, token: string, id: string): Promise<Probe[]> {
  const calls = [
    { method: 'GET', path: `${TASKS_PATH}/${id}` },
    { method: 'POST', path: `${TASKS_PATH}/${id}/cancel` },
  ];
  return Promise.all(
    calls.map(async ({ method, path }) => {
      const response = await fetch(`${url}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}` },
      });
      const body = (await response.json()) as Record<string, unknown>;
      delete body.request_id;
      return {
        status: response.status,
        body: JSON.parse(JSON.stringify(body).replaceAll(id, '<id>')) as unknown,
      };
    }),
  );
}

/** The task ids `token` finds when it lists tasks, with no filter and filtered by `tokenId`. */
async function listed(url: string, token: string, tokenId: string): Promise<unknown[]> {
  const pages = await Promise.all(
    [TASKS_PATH, `${TASKS_PATH}?api_key_id=${tokenId}`].map(async (path) => {
      const response = await fetch(`${url}${path}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      assert.equal(response.status, 200);
      return ((await response.json()) as { data: { task_id: string }[] }).data;
    }),
  );
  return pages.flat().map((entry) => entry.task_id);
}

async function issue(rig: SubmissionRig, account: string, imageQuota?: number) {
  const { token, record } = await rig.gateway.services.tokenIssuer.issue({
    name: account,
    account,
    admin: false,
    expiresInSeconds: undefined,
  });
  if (imageQuota !== undefined)
    await rig.gateway.admission.limits.update(record.id, { imageQuota });
  return { token, id: record.id };
}

/**
 * Other tokens (of the owner's account and of another) asking for, canceling and listing the
 * owner's task get exactly what an unknown id gets, and change nothing.
 */
async function checkStrangersSeeNothing(
  rig: SubmissionRig,
  strangers: readonly { token: string; id: string }[],
  task: TaskRecord,
): Promise<void> {
  for (const stranger of strangers) {
    const unknown = await probe(rig.url, stranger.token, randomUUID());
    assert.equal(unknown[0]?.status, 404);
    assert.deepEqual(await probe(rig.url, stranger.token, task.id), unknown);
    assert.deepEqual(await listed(rig.url, stranger.token, rig.tokenId), []);
    const limits = await rig.gateway.admission.limits.find(stranger.id);
    assert.deepEqual([limits?.imagesUsed, limits?.imagesReserved], [0, 0]);
  }
  assert.deepEqual(await rig.gateway.tasks.store.find(task.id), task, 'the task is unchanged');
}

it("other tokens' GET, cancel and list of a task id, while its task is held for the hand-over of its receipt and after it ran: the answers of an unknown id, and the task unaffected", async (t) => {
  const target = await postgresTarget(t);
  if (target === undefined) return;
  const rig = await submissionRig(t, target);
  const first = await issue(rig, 'first-co', 10);
  const strangers = [await issue(rig, 'leaving-co'), await issue(rig, 'prying-co', 10)];
  let letUpstreamAnswer = () => {};
  const upstreamDone = new Promise<void>((resolve) => (letUpstreamAnswer = resolve));
  rig.fake.script({ kind: 'succeed', images: 1, until: upstreamDone });
  rig.fake.script({ kind: 'succeed', images: IMAGES, imageCount: IMAGES });

  const requestId = `held-${randomUUID()}`;
  const exchange = submissionBehindAStalledAnswer(
    Number(new URL(rig.url).port),
    first.token,
    rig.token,
    requestId,
  );
  const store = rig.gateway.tasks.store;
  const stored = async () =>
    (await store.list(everyTask(), 0, 10)).find((task) => task.requestId === requestId);
  await eventually(async () => (await stored()) !== undefined, 20_000, 'the task is stored');
  const held = (await stored()) as TaskRecord;
  assert.equal(held.state, 'PENDING');
  assert.ok(held.leaseUntil !== undefined, 'held: its receipt is not handed over');

  await checkStrangersSeeNothing(rig, strangers, held);
  const owners = await rig.gateway.admission.limits.find(rig.tokenId);
  assert.deepEqual([owners?.imagesUsed, owners?.imagesReserved], [0, IMAGES]);

  letUpstreamAnswer();
  const answers = await exchange;
  assert.match(answers, new RegExp(`"task_id":"${held.id}"`), 'the owner gets its task id');
  await eventually(
    async () => (await store.find(held.id))?.state === 'SUCCEEDED',
    20_000,
    'the task runs',
  );
  const ran = (await store.find(held.id)) as TaskRecord;
  await checkStrangersSeeNothing(rig, strangers, ran);

  const own = await fetch(`${rig.url}${TASKS_PATH}/${held.id}`, {
    headers: { authorization: `Bearer ${rig.token}` },
  });
  assert.equal(own.status, 200);
  const status = (await own.json()) as { output: { task_status: string; choices: unknown[] } };
  assert.equal(status.output.task_status, 'SUCCEEDED');
  const rows = await rig.gateway.admission.usage.list({ tokenId: rig.tokenId }, 10);
  assert.deepEqual(
    rows.map((row) => [row.status, row.imagesBilled]),
    [[200, IMAGES]],
  );
});
