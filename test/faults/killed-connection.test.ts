import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { it } from 'node:test';
import pg from 'pg';
import { startFakeDashScope } from '../fixtures/fake-dashscope.js';
import { postgresTarget } from '../helpers/postgres.js';
import {
  dashScopeChannelEnv,
  eventually,
  nodeDatabaseUrl,
  nodeEnv,
  openBooks,
  settleStopAndCheck,
  startNodes,
  Traffic,
} from './fault-rig.js';

const POOL_ERROR_LOGGED = 'a pooled database connection failed';
const RESERVATION_TTL_MS = 3000;

it('gateway nodes whose pooled PostgreSQL connections are terminated stay up, keep answering 200, and bill exactly', async (t) => {
  const target = await postgresTarget(t);
  if (target === undefined || target.kind !== 'postgres') return;
  const fake = await startFakeDashScope();
  t.after(() => fake.close());
  const books = await openBooks(t, target);
  const applicationName = `imagegate-fault-${randomBytes(4).toString('hex')}`;
  const nodes = await startNodes(
    t,
    3,
    nodeEnv(books, {
      IMAGEGATE_DATABASE_URL: nodeDatabaseUrl(target, applicationName),
      IMAGEGATE_RESERVATION_TTL_MS: String(RESERVATION_TTL_MS),
      ...(await dashScopeChannelEnv(t, fake)),
    }),
  );
  const admin = new pg.Client({ connectionString: target.url });
  await admin.connect();
  t.after(() => admin.end());
  const backends = async (state?: 'idle') =>
    (
      await admin.query<{ pid: number }>(
        `select pid from pg_stat_activity where application_name = $1 ${state === undefined ? '' : 'and state = $2'}`,
        state === undefined ? [applicationName] : [applicationName, state],
      )
    ).rows.map((row) => row.pid);
  const terminated = new Set<number>();
  const terminate = async (pids: number[]) => {
    const { rows } = await admin.query<{ pid: number; ok: boolean }>(
      'select pid, pg_terminate_backend(pid) as ok from unnest($1::int[]) as pid',
      [pids],
    );
    for (const row of rows) if (row.ok) terminated.add(row.pid);
    return rows.filter((row) => row.ok).length;
  };

  const token = await books.token({ imageQuota: 1000 });
  const traffic = new Traffic(fake, token.authorization);
  const round = (name: string, perNode: number) => traffic.round(name, nodes, perNode);

  // 1. Warm: every node has pooled connections, named by the application name in its URL.
  const warm = await round('warm', 2);
  assert.deepEqual(
    warm.map((outcome) => outcome.status),
    warm.map(() => 200),
  );
  await eventually(async () => (await backends('idle')).length >= nodes.length, 5000, 'idle pool');

  // 2. Idle pooled connections are terminated, as a server restart or an operator would, until
  // every node has lost at least one (a connection busy at that instant is left alone).
  let killedIdle = 0;
  await eventually(
    async () => {
      killedIdle += await terminate(await backends('idle'));
      return nodes.every((node) => node.logs().includes(POOL_ERROR_LOGGED));
    },
    5000,
    'every node logged the loss of a pooled connection',
  );
  t.diagnostic(`terminated ${killedIdle} idle pooled connections of ${nodes.length} nodes`);
  // The pools have seen their connections end (the server ends them all at once) before the
  // next requests; a request that takes one in that instant is the busy case below.
  await eventually(
    async () => (await backends()).every((pid) => !terminated.has(pid)),
    5000,
    'the terminated connections ended',
  );
  assert.ok(
    nodes.every((node) => node.alive()),
    'no node exited',
  );
  const afterIdleKill = await round('after-idle-kill', 2);
  assert.deepEqual(
    afterIdleKill.map((outcome) => outcome.status),
    afterIdleKill.map(() => 200),
    'the pools reconnected by themselves',
  );

  // 3. Every connection, busy ones included, is terminated while requests are in flight: those
  // caught mid-query get 503 Overloaded with Retry-After (never a 500), nothing is billed twice.
  let busyRoundAnswered = false;
  const busyRound = round('busy-kill', 4).finally(() => {
    busyRoundAnswered = true;
  });
  let killedBusy = 0;
  await eventually(
    async () => {
      killedBusy += await terminate(await backends());
      return busyRoundAnswered;
    },
    30_000,
    'the busy round answered while its connections were terminated',
  );
  const duringBusyKill = await busyRound;
  t.diagnostic(
    `busy kill: ${killedBusy} connections terminated; answers ${JSON.stringify(
      duringBusyKill.map((outcome) => outcome.status),
    )}`,
  );
  for (const outcome of duringBusyKill) {
    if (outcome.status === 200) continue;
    assert.equal(outcome.status, 503, `${outcome.requestId}: ${outcome.code}`);
    assert.equal(outcome.code, 'Overloaded');
    assert.ok(Number(outcome.headers?.get('retry-after')) >= 1, 'Retry-After');
  }
  const afterBusyKill = await round('after-busy-kill', 2);
  assert.deepEqual(
    afterBusyKill.map((outcome) => outcome.status),
    afterBusyKill.map(() => 200),
  );
  assert.ok(
    nodes.every((node) => node.alive()),
    'no node exited',
  );

  // 4. The ledger: one row per request, exactly what each caller got, and the counters agree.
  // A failed request whose reservation could not be released over a dead connection frees it
  // when its lease lapses; then a graceful stop writes every ledger row still buffered.
  // A request whose authentication met a dead connection has no principal, so no row, like any
  // unauthenticated request; every other request has exactly one.
  const { rows, unrecorded } = await settleStopAndCheck(
    books,
    token.id,
    nodes,
    traffic.outcomes,
    RESERVATION_TTL_MS,
    (outcome) => outcome.status === 503,
  );
  t.diagnostic(
    `${rows.length} rows for ${traffic.outcomes.length} requests; 503s at authentication, without a row: ${unrecorded.length}`,
  );
});
