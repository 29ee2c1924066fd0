import assert from 'node:assert/strict';
import { it } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import type { DatabaseLimits } from '../../src/config/config.js';
import { openDatabase } from '../../src/store/database/database.js';
import { startFakeDashScope } from '../fixtures/fake-dashscope.js';
import { sessionsSettled } from '../helpers/settled-sessions.js';
import {
  dashScopeChannelEnv,
  eventually,
  type FaultNode,
  nodeEnv,
  openBooks,
  settleStopAndCheck,
  type Outcome,
  probe,
  startNodes,
  Traffic,
} from './fault-rig.js';
import { throwawayPostgres } from './throwaway-postgres.js';

const RESERVATION_TTL_MS = 3000;
/** What a caller may wait for an answer while the database is down. */
const DOWN_ANSWER_MS = 3000;
/** A frozen server answers nothing: the client's own query time-out (statement 5 s + 1 s) ends it. */
const FROZEN_ANSWER_MS = 8000;
const READY_ANSWER_MS = 3000;

function assertOverloaded(outcomes: readonly Outcome[], withinMs: number): void {
  for (const outcome of outcomes) {
    const what = `${outcome.requestId}: ${outcome.status} ${outcome.code} after ${outcome.ms} ms`;
    assert.equal(outcome.status, 503, what);
    assert.equal(outcome.code, 'Overloaded', what);
    assert.ok(Number(outcome.headers?.get('retry-after')) >= 1, `${what}: Retry-After`);
    assert.ok(outcome.ms < withinMs, what);
  }
}

async function assertNotReady(nodes: readonly FaultNode[]): Promise<number[]> {
  const answers = await Promise.all(nodes.map((node) => probe(node.url, '/readyz')));
  for (const answer of answers) {
    assert.equal(answer.status, 503, `/readyz: ${answer.status} after ${answer.ms} ms`);
    assert.ok(answer.ms < READY_ANSWER_MS, `/readyz took ${answer.ms} ms`);
    assert.match(answer.body, /database/);
  }
  return answers.map((answer) => answer.ms);
}

async function untilReady(nodes: readonly FaultNode[]): Promise<void> {
  await eventually(
    async () =>
      (await Promise.all(nodes.map((node) => probe(node.url, '/readyz')))).every(
        (answer) => answer.status === 200,
      ),
    15_000,
    'every node ready again',
  );
}

it('a PostgreSQL server that stops, starts again and freezes: nodes stay up, answer 503 Overloaded quickly, recover by themselves, and bill exactly', async (t) => {
  const cluster = await throwawayPostgres(t);
  if (cluster === undefined) return;
  const fake = await startFakeDashScope();
  t.after(() => fake.close());
  const books = await openBooks(t, { kind: 'postgres', url: cluster.url });
  const common = {
    IMAGEGATE_DATABASE_URL: cluster.url,
    IMAGEGATE_RESERVATION_TTL_MS: String(RESERVATION_TTL_MS),
    ...(await dashScopeChannelEnv(t, fake)),
  };
  // Node 0 remembers tokens and limits (a request gets as far as its quota reservation while the
  // database is away, and its row waits in memory); node 1 reads them on every request (it is
  // refused at authentication, with no principal and so no row).
  const [cached, uncached] = await Promise.all([
    startNodes(t, 1, nodeEnv(books, { ...common, IMAGEGATE_TOKEN_CACHE_MS: '600000' })),
    startNodes(t, 1, nodeEnv(books, { ...common, IMAGEGATE_TOKEN_CACHE_MS: '0' })),
  ]);
  const nodes = [...cached, ...uncached] as [FaultNode, FaultNode];
  const token = await books.token({ imageQuota: 1000 });
  const traffic = new Traffic(fake, token.authorization);
  const allOk = (outcomes: readonly Outcome[], what: string) =>
    assert.deepEqual(
      outcomes.map((outcome) => `${outcome.requestId} ${outcome.status}`),
      outcomes.map((outcome) => `${outcome.requestId} 200`),
      what,
    );

  allOk(await traffic.round('warm', nodes, 2), 'warm-up');

  // 1. The server stops (pg_ctl stop -m fast): every pooled connection ends, new ones are refused.
  await cluster.stop();
  const down = await traffic.round('down', nodes, 2, 10_000);
  assertOverloaded(down, DOWN_ANSWER_MS);
  const downReady = await assertNotReady(nodes);
  t.diagnostic(
    `stopped: generations answered 503 in ${down.map((o) => o.ms).join(', ')} ms; /readyz 503 in ${downReady.join(', ')} ms`,
  );
  assert.ok(
    nodes.every((node) => node.alive()),
    'no node exited while the database was down',
  );

  // 2. It starts again: the same processes serve again, without a restart.
  await cluster.start();
  const restartedAt = Date.now();
  await untilReady(nodes);
  t.diagnostic(`ready again ${Date.now() - restartedAt} ms after the server started`);
  allOk(await traffic.round('restarted', nodes, 2), 'after the restart');

  // 3. The server freezes (SIGSTOP): connections stay open and nothing answers.
  await cluster.freeze();
  const frozenReady = await assertNotReady(nodes);
  const frozen = await traffic.round('frozen', nodes, 1, 20_000);
  t.diagnostic(
    `frozen: /readyz 503 in ${frozenReady.join(', ')} ms; generations answered ${frozen
      .map((o) => `${o.status} in ${o.ms} ms`)
      .join(', ')}`,
  );
  assertOverloaded(frozen, FROZEN_ANSWER_MS);
  assert.ok(
    nodes.every((node) => node.alive()),
    'no node exited while the database was frozen',
  );
  await cluster.thaw();
  await untilReady(nodes);
  allOk(await traffic.round('thawed', nodes, 2), 'after the thaw');
  // 4. Books: requests refused at their reservation kept their rows in memory and wrote them
  // once the database was back; the ones refused at authentication (node 1) have none.
  const { rows, unrecorded } = await settleStopAndCheck(
    books,
    token.id,
    nodes,
    traffic.outcomes,
    RESERVATION_TTL_MS,
    (outcome) => outcome.status === 503 && outcome.requestId.includes('-1-'),
  );
  t.diagnostic(`${rows.length} rows for ${traffic.outcomes.length} requests`);
  assert.deepEqual(
    unrecorded.map((outcome) => outcome.requestId).sort(),
    traffic.outcomes
      .filter((outcome) => outcome.status === 503 && outcome.requestId.includes('-1-'))
      .map((outcome) => outcome.requestId)
      .sort(),
    'every 503 of the uncached node lacks a row, because it failed at authentication',
  );
});

it('after a freeze, a statement the database answers is committed: a connection whose statement went unanswered is not reused', async (t) => {
  const cluster = await throwawayPostgres(t);
  if (cluster === undefined) return;
  // One connection, so that the statement after the freeze gets the very one that timed out.
  const limits: DatabaseLimits = {
    poolSize: 1,
    acquireTimeoutMs: 500,
    statementTimeoutMs: 1000,
    lockTimeoutMs: 500,
    idleInTransactionTimeoutMs: 1000,
  };
  const database = await openDatabase({ kind: 'postgres', url: cluster.url }, { limits });
  t.after(() => database.close());
  await sql`create table probe (id integer)`.execute(database.db);

  await cluster.freeze();
  const started = Date.now();
  await assert.rejects(
    database.db.transaction().execute((trx) => sql`insert into probe values (1)`.execute(trx)),
    /Query read timeout/,
  );
  const waited = Date.now() - started;
  assert.ok(waited < 2 * (limits.statementTimeoutMs + 1000), `gave up after ${waited} ms`);
  await cluster.thaw();

  // Answered as a success: it must be committed, not left in a transaction that the frozen
  // `begin` opened once the server woke up (and that the server later ends, rolling it back).
  await sql`insert into probe values (2)`.execute(database.db);
  const observer = new pg.Client({ connectionString: cluster.url });
  await observer.connect();
  await sessionsSettled(observer);
  const { rows } = await observer
    .query<{ id: number }>('select id from probe order by id')
    .finally(() => observer.end());
  assert.deepEqual(
    rows.map((row) => row.id),
    [2],
  );
});
