import assert from 'node:assert/strict';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { it, type TestContext } from 'node:test';
import type { TaskRecord } from '../../src/domain/task.js';
import type { DatabaseTarget } from '../../src/store/database/database.js';
import { eventually } from '../faults/fault-rig.js';
import { BACKENDS } from '../helpers/database-backends.js';
import { assertLevelsBackToZero, waitForLevels } from '../helpers/level-gauges.js';
import { readGauges } from '../helpers/metrics-gauges.js';
import { postgresTarget } from '../helpers/postgres.js';
import { connectionsOpen } from '../helpers/server-connections.js';
import { type LeavingCaller, LeavingCallers, type SeenAnswer } from './leaving-caller.js';
import {
  everyTask,
  lockRows,
  lockTaskQueue,
  someoneWaitsOn,
  submissionRig,
  type SubmissionRig,
} from './submission-rig.js';

const CALLERS = 40;
const IMAGES = 2;
/** Random leavers leave within this long after the last lock is released (or after sending). */
const RANDOM_SPREAD_MS = 400;
/** What a task withdrawn by its own node says; a lapsed hold's recovery says something else. */
const WITHDRAWN = /^the caller left before the answer carrying this task id reached it/;

/**
 * How each caller ends: destroys its connection while the token's row is locked (before its
 * reservation), while the queue's lock is held (its task about to be stored), at a random moment
 * after that, right after the answer's head came; or reads its whole answer.
 */
type Plan = 'row-locked' | 'queue-locked' | 'random' | 'after-headers' | 'reads';

interface Caller extends LeavingCaller {
  plan: Plan;
}

interface Outcome {
  caller: Caller;
  seen: SeenAnswer;
  task: TaskRecord | undefined;
}

/** For each `X-Request-Id`, in the order the gateway's server saw them: answer finished, connection closed. */
type HandOvers = Map<string, ('finish' | 'close')[]>;

/**
 * Watches the gateway's own HTTP server: when each answer was handed to the operating system
 * (`finish`) and when the server saw its connection close.
 */
function watchHandOvers(server: Server): HandOvers {
  const seen: HandOvers = new Map();
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const requestId = String(request.headers['x-request-id']);
    const events: ('finish' | 'close')[] = [];
    seen.set(requestId, events);
    response.once('finish', () => events.push('finish'));
    request.socket.once('close', () => events.push('close'));
  });
  return seen;
}

/** Half the callers leave, split between the plans given; their order of arrival is random. */
function plans(leaving: readonly Plan[]): Plan[] {
  const all = Array.from({ length: CALLERS }, (_, index) =>
    index < CALLERS / 2 ? (leaving[index % leaving.length] as Plan) : 'reads',
  );
  return all.sort(() => Math.random() - 0.5);
}

async function crowdRig(t: TestContext, target: DatabaseTarget): Promise<SubmissionRig> {
  return submissionRig(t, target, {
    imageQuota: CALLERS * IMAGES,
    env: {
      // Every submission can wait on a lock at once, each on a connection of its own.
      IMAGEGATE_DB_POOL_SIZE: String(CALLERS + 4),
      IMAGEGATE_DB_ACQUIRE_TIMEOUT_MS: '20000',
      // Read without a token: a reader of GET /metrics must not wait on the locked token row.
      IMAGEGATE_METRICS: 'public',
    },
  });
}

/** `randomFromStart`: random leavers leave on their own within the spread after sending. */
function startCallers(
  t: TestContext,
  rig: SubmissionRig,
  leaving: readonly Plan[],
  randomFromStart = false,
): Caller[] {
  rig.fake.script(
    ...Array.from({ length: CALLERS }, () => ({
      kind: 'succeed' as const,
      images: IMAGES,
      imageCount: IMAGES,
    })),
  );
  const callers = new LeavingCallers(Number(new URL(rig.url).port), rig.token);
  t.after(() => callers.close());
  const run = Math.random().toString(36).slice(2, 8);
  return plans(leaving).map((plan, index) => ({
    plan,
    ...callers.submit(`crowd-${run}-${index}-${plan}`, IMAGES, {
      afterHeaders: plan === 'after-headers',
      afterMs: plan === 'random' && randomFromStart ? Math.random() * RANDOM_SPREAD_MS : undefined,
    }),
  }));
}

function leaveAtRandom(callers: readonly Caller[]): void {
  for (const caller of callers)
    if (caller.plan === 'random') setTimeout(caller.leave, Math.random() * RANDOM_SPREAD_MS);
}

function leaveIf(callers: readonly Caller[], plan: Plan): number {
  const leaving = callers.filter((caller) => caller.plan === plan);
  for (const caller of leaving) caller.leave();
  return leaving.length;
}

/** Waits until no task is PENDING or RUNNING and nothing is reserved; returns every outcome. */
async function settle(rig: SubmissionRig, callers: readonly Caller[]): Promise<Outcome[]> {
  const seen = await Promise.all(callers.map((caller) => caller.answer));
  const store = rig.gateway.tasks.store;
  await eventually(
    async () => {
      const open = (await store.list(everyTask(), 0, 1000)).filter(
        (task) => task.state === 'PENDING' || task.state === 'RUNNING',
      );
      const limits = await rig.gateway.admission.limits.find(rig.tokenId);
      return open.length === 0 && limits?.imagesReserved === 0;
    },
    30_000,
    'every task ends and nothing stays reserved',
  );
  const tasks = await store.list(everyTask(), 0, 1000);
  const byRequest = new Map(tasks.map((task) => [task.requestId, task]));
  assert.equal(byRequest.size, tasks.length, 'one task per submission');
  const ours = new Set(callers.map((caller) => caller.requestId));
  assert.deepEqual(
    tasks.filter((task) => !ours.has(task.requestId)),
    [],
    'no task without a caller',
  );
  return callers.map((caller, index) => ({
    caller,
    seen: seen[index] as SeenAnswer,
    task: byRequest.get(caller.requestId),
  }));
}

/**
 * A task whose id reached its caller runs and is billed; any other was withdrawn, unbilled; a
 * caller who left before its reservation has no task. The books and the gauges agree.
 */
async function checkOutcomes(
  t: TestContext,
  rig: SubmissionRig,
  outcomes: readonly Outcome[],
  handOvers: HandOvers,
) {
  const rows = await rig.gateway.admission.usage.list({ tokenId: rig.tokenId }, 1000);
  const rowOf = (requestId: string) => rows.find((row) => row.requestId === requestId);
  const handedOverUnread: string[] = [];
  for (const { caller, seen, task } of outcomes) {
    const what = `${caller.requestId} saw ${JSON.stringify(seen)}, task ${task?.state} ${task?.errorMessage ?? ''}`;
    if (caller.plan === 'reads' || caller.plan === 'after-headers')
      assert.ok(seen.status === 200 && seen.taskId !== undefined, what);
    if (caller.plan === 'row-locked' || (caller.plan === 'queue-locked' && task === undefined)) {
      assert.equal(task, undefined, what);
      assert.deepEqual(
        { status: rowOf(caller.requestId)?.status, billed: rowOf(caller.requestId)?.imagesBilled },
        { status: 499, billed: 0 },
        what,
      );
      continue;
    }
    assert.ok(task !== undefined, what);
    if (seen.taskId !== undefined) {
      assert.equal(seen.taskId, task.id, what);
      assert.equal(task.state, 'SUCCEEDED', what);
      assert.equal(rowOf(caller.requestId)?.imagesBilled, IMAGES, what);
    } else if (task.state === 'SUCCEEDED') {
      // The documented window: the answer was handed to the connection ('finish') before the
      // gateway saw it close (if it has yet), and the caller destroyed it unread; only a random leaver can be
      // caught in it.
      assert.equal(caller.plan, 'random', what);
      assert.equal(handOvers.get(caller.requestId)?.[0], 'finish', what);
      handedOverUnread.push(caller.requestId);
    } else {
      assert.equal(task.state, 'CANCELED', what);
      assert.equal(task.errorCode, 'CallerGone', what);
      assert.match(task.errorMessage ?? '', WITHDRAWN, what);
      assert.deepEqual(
        { status: rowOf(caller.requestId)?.status, billed: rowOf(caller.requestId)?.imagesBilled },
        { status: 499, billed: 0 },
        what,
      );
    }
    if (caller.plan === 'queue-locked') assert.equal(task.state, 'CANCELED', what);
  }
  const succeeded = outcomes.filter(({ task }) => task?.state === 'SUCCEEDED').length;
  const limits = await rig.gateway.admission.limits.find(rig.tokenId);
  assert.deepEqual(
    {
      used: limits?.imagesUsed,
      reserved: limits?.imagesReserved,
      upstream: rig.fake.submissions().length,
    },
    { used: succeeded * IMAGES, reserved: 0, upstream: succeeded },
  );
  assert.equal(
    rows.reduce((sum, row) => sum + row.imagesBilled, 0),
    succeeded * IMAGES,
  );
  const count = (plan: Plan, state?: string) =>
    outcomes.filter(
      (outcome) =>
        outcome.caller.plan === plan && (state === undefined || outcome.task?.state === state),
    ).length;
  t.diagnostic(
    `succeeded ${succeeded} of ${CALLERS}; ${(['queue-locked', 'random'] as const)
      .map(
        (plan) =>
          `${plan}: ${count(plan, 'SUCCEEDED')} succeeded, ${count(plan, 'CANCELED')} withdrawn, ${count(plan) - count(plan, 'SUCCEEDED') - count(plan, 'CANCELED')} without a task`,
      )
      .join('; ')}; handed over unread: ${handedOverUnread.length}`,
  );
  await assertLevelsBackToZero({ gauges: () => readGauges(rig.url, { ownConnection: true }) });
}

it(`${CALLERS} task submissions at once on PostgreSQL, half of whose callers leave (row locked, queue locked, at random, after the head): a task runs and bills only if its id reached its caller`, async (t) => {
  const target = await postgresTarget(t);
  if (target === undefined) return;
  const rig = await crowdRig(t, target);
  const server = rig.gateway.app.server;
  const handOvers = watchHandOvers(server);
  const tokenRow = await rig.locker();
  const queue = await rig.locker();
  await lockRows(tokenRow, 'select id from tokens where id = $1', [rig.tokenId]);
  await lockTaskQueue(queue);
  const callers = startCallers(t, rig, ['row-locked', 'queue-locked', 'random', 'after-headers']);
  await waitForLevels(
    { gauges: () => readGauges(rig.url, { ownConnection: true }) },
    (levels) => (levels.imagegate_in_flight_requests ?? 0) >= CALLERS,
    'every submission is in the gateway',
  );
  // Reservations are taken in groups, one statement each: one waits, the rest queue behind it.
  await someoneWaitsOn(tokenRow, 'the reservations wait on the locked row');

  const rowLocked = leaveIf(callers, 'row-locked');
  await connectionsOpen(server, CALLERS - rowLocked);
  await tokenRow.query('commit');
  await someoneWaitsOn(queue, 'the submissions wait to be stored');

  const queueLocked = leaveIf(callers, 'queue-locked');
  await connectionsOpen(server, CALLERS - rowLocked - queueLocked);
  await queue.query('commit');
  leaveAtRandom(callers);

  await checkOutcomes(t, rig, await settle(rig, callers), handOvers);
});

it(`${CALLERS} task submissions at once on SQLite, half of whose callers leave (at random, after the head): a task runs and bills only if its id reached its caller`, async (t) => {
  const sqlite = BACKENDS.find(([name]) => name === 'SQLite');
  const target = await sqlite?.[1](t);
  assert.ok(target !== undefined);
  const rig = await crowdRig(t, target);
  const handOvers = watchHandOvers(rig.gateway.app.server);
  const callers = startCallers(t, rig, ['random', 'after-headers'], true);
  await checkOutcomes(t, rig, await settle(rig, callers), handOvers);
});
