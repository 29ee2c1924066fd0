import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { GatewayError } from '../../src/errors/gateway-error.js';
import { type Database, openDatabase } from '../../src/store/database/database.js';
import type { TaskFilter } from '../../src/domain/task.js';
import { createTaskStore } from '../../src/store/task-store.js';
import { SqlUsageStore } from '../../src/store/usage-store.js';
import { eventually } from '../helpers/waits.js';

const ROWS = 150_000;
/**
 * A read of a few seconds. SQLite cannot be interrupted inside a statement: a thread ended
 * during one lingers until it returns, and keeps the test's process alive until then.
 */
const LONG_COUNT = 20_000_000;
/** A read of a fraction of a second, to hold a lane while others queue. */
const SLOW_COUNT = 2_000_000;
/** The tasks of one caller with many. */
const BUSY_CALLER: TaskFilter = {
  owner: 'tok_busy',
  tokenId: undefined,
  state: undefined,
  model: undefined,
  submittedFrom: undefined,
  submittedUntil: undefined,
};
const DAY_MS = 86_400_000;
/** Reads a lane of task listings queues behind the running one (src/store/database/database.ts). */
const LISTING_LANE_WAITING = 32;
/** Reads the lane of reports queues behind the running one. */
const REPORT_LANE_WAITING = 8;
const FIRST_DAY = 20_000 * DAY_MS;

/** A read that counts up to `upTo` on SQLite, taking longer the higher it counts. */
function countingTo(database: Database, upTo: number) {
  const counting = sql<{
    c: number;
  }>`with recursive n(i) as (select 0 union all select i + 1 from n where i < ${upTo}) select count(*) as c from n`;
  return { compile: () => counting.compile(database.db) };
}

/** `query`, saying once a lane has compiled it, which it does as it sends it to run. */
function sentWhenCompiled<Query extends { compile(): unknown }>(query: Query) {
  const watched = {
    sent: false,
    compile: () => {
      watched.sent = true;
      return query.compile() as ReturnType<Query['compile']>;
    },
  };
  return watched;
}

/** A serving SQLite database (reads in a worker) and the CLI's view of the same file (inline). */
async function openBoth(t: TestContext): Promise<{ serving: Database; inline: Database }> {
  const directory = await mkdtemp(path.join(tmpdir(), 'imagegate-long-reads-'));
  const file = path.join(directory, 'imagegate.db');
  const serving = await openDatabase({ kind: 'sqlite', file }, { sqliteWork: 'background' });
  const inline = await openDatabase({ kind: 'sqlite', file });
  t.after(async () => {
    await inline.close();
    await serving.close();
    await rm(directory, { recursive: true, force: true });
  });
  return { serving, inline };
}

/** `ROWS` ledger rows over three days, two models and four tokens, written by SQLite itself. */
async function fillLedger(database: Database): Promise<void> {
  await sql`
    insert into usage_ledger (id, request_id, token_id, account, model, status, images_requested,
      images_delivered, images_received, images_billed, cost_micros, gateway_ms, created_at)
    with recursive n(i) as (select 0 union all select i + 1 from n where i < ${ROWS - 1})
    select printf('row-%08d', i), printf('req-%08d', i), 'tok_' || (i % 4), 'acme',
      case when i % 3 = 0 then 'txt-image-2.0-pro' else 'gen-2.7-image-pro' end,
      case when i % 10 = 0 then 500 else 200 end, 2, 2 - (i % 2), 2 - (i % 2), 2 - (i % 2),
      1000, 3, ${FIRST_DAY} + i * ${Math.floor((3 * DAY_MS) / ROWS)}
    from n`.execute(database.db);
}

describe('long reads of a serving SQLite database', () => {
  it('run off the event loop: timers fire while a report scans the whole ledger', async (t) => {
    const { serving, inline } = await openBoth(t);
    await fillLedger(serving);

    const turnsDuring = async (report: () => Promise<unknown>) => {
      let turns = 0;
      const ticker = setInterval(() => turns++, 1);
      try {
        await report();
      } finally {
        clearInterval(ticker);
      }
      return turns;
    };
    const servingUsage = new SqlUsageStore(serving);
    const inlineUsage = new SqlUsageStore(inline);
    await servingUsage.summarize({}); // the worker thread and its connection start
    const offLoop = await turnsDuring(() => servingUsage.summarize({}, 'day'));
    const onLoop = await turnsDuring(() => inlineUsage.summarize({}, 'day'));
    assert.equal(onLoop, 0, 'on the one connection, the report holds the event loop throughout');
    assert.ok(offLoop >= 2, `the event loop turned ${offLoop} times during the report`);
  });

  it('answer exactly what the same queries answer on the one connection', async (t) => {
    const { serving, inline } = await openBoth(t);
    await fillLedger(serving);
    const servingUsage = new SqlUsageStore(serving);
    const inlineUsage = new SqlUsageStore(inline);
    const filter = {
      since: FIRST_DAY + DAY_MS / 2,
      until: FIRST_DAY + 2 * DAY_MS,
      tokenId: 'tok_1',
    };

    for (const grouping of [undefined, 'day', 'model', 'token'] as const) {
      const summary = await servingUsage.summarize(filter, grouping);
      assert.deepEqual(summary, await inlineUsage.summarize(filter, grouping), String(grouping));
    }
    const [total] = await servingUsage.summarize({});
    assert.equal(total?.requests, ROWS);
    assert.equal(total?.failed, ROWS / 10);
    const rows = await servingUsage.list(filter, 500);
    assert.equal(rows.length, 500);
    assert.deepEqual(rows, await inlineUsage.list(filter, 500));
  });

  it('see what was committed just before, and pass a failing query on', async (t) => {
    const { serving } = await openBoth(t);
    const usage = new SqlUsageStore(serving);
    assert.equal((await usage.summarize({}))[0]?.requests, 0);
    await fillLedger(serving);
    assert.equal((await usage.summarize({}))[0]?.requests, ROWS);
    await assert.rejects(
      serving.reportReads.all({
        compile: () => sql`select x from no_such_table`.compile(serving.db),
      }),
      (error: Error & { code?: string }) => {
        assert.match(error.message, /no such table: no_such_table/);
        // The code tells an unavailable database (SQLITE_BUSY: 503) from a bad query.
        assert.equal(error.code, 'SQLITE_ERROR');
        return true;
      },
    );
    assert.equal(
      (await usage.summarize({}))[0]?.requests,
      ROWS,
      'the worker serves on after a failure',
    );
  });

  it('serve on after a query that fails to compile', async (t) => {
    const { serving } = await openBoth(t);
    const broken = {
      compile: () => {
        throw new Error('no such query');
      },
    } as never;
    await assert.rejects(serving.listingReads.all(broken), /no such query/);
    const [row] = await serving.listingReads.all({
      compile: () => sql<{ one: number }>`select 1 as one`.compile(serving.db),
    });
    assert.equal(row?.one, 1);
  });

  it('cannot write', async (t) => {
    const { serving } = await openBoth(t);
    await assert.rejects(
      serving.reportReads.all({
        compile: () => sql`delete from usage_ledger returning id`.compile(serving.db),
      }),
      /readonly|read-only|query_only/i,
    );
  });

  it('are given up when the database closes, which then closes at once', async (t) => {
    const { serving } = await openBoth(t);
    const long = sentWhenCompiled(countingTo(serving, LONG_COUNT));
    const report = serving.reportReads.all(long);
    const outcome = report.then(
      () => 'answered',
      () => 'given up',
    );
    await eventually(() => long.sent, 10_000, 'the long read sent to its worker');
    await serving.close();
    assert.equal(await outcome, 'given up');
    await assert.rejects(sql`select 1`.execute(serving.db), 'the main connection is closed too');
  });

  it('close at once with reads waiting their turn behind the running one, refusing them with 503', async (t) => {
    const { serving } = await openBoth(t);
    const long = sentWhenCompiled(countingTo(serving, LONG_COUNT));
    const running = serving.listingReads.all(long);
    const waiting = [1, 2, 3].map(() =>
      serving.listingReads.all({ compile: () => sql`select 1 as one`.compile(serving.db) }),
    );
    const outcomes = Promise.allSettled([running, ...waiting]);
    await eventually(() => long.sent, 10_000, 'the long read sent to its worker');
    const closing = serving.close().then(() => 'closed');
    const deadline = sleep(5_000, 'still closing');
    assert.equal(await Promise.race([closing, deadline]), 'closed');
    for (const outcome of await outcomes) {
      assert.equal(outcome.status, 'rejected');
      const error = (outcome as PromiseRejectedResult).reason as GatewayError;
      assert.ok(error instanceof GatewayError);
      assert.equal(error.code, 'Overloaded');
      assert.match(error.message, /shutting down/, 'the running read too: a shutdown, not a bug');
    }
    await assert.rejects(
      serving.listingReads.all({ compile: () => sql`select 1 as one`.compile(serving.db) }),
      /shutting down/,
      'a read after closing is refused too',
    );
  });

  it('refuse a read that finds the lane full with 503 Overloaded and Retry-After, and serve on', async (t) => {
    const { serving } = await openBoth(t);
    const tasks = createTaskStore(serving.kind, serving.db, serving.listingReads);
    const running = serving.listingReads.all(countingTo(serving, SLOW_COUNT));
    const queued = Array.from({ length: LISTING_LANE_WAITING }, () => tasks.count(BUSY_CALLER));
    await assert.rejects(tasks.count(BUSY_CALLER), (error: unknown) => {
      assert.ok(error instanceof GatewayError);
      assert.equal(error.code, 'Overloaded');
      assert.equal(error.headers['Retry-After'], '1');
      assert.match(error.message, /^task listings are busy: 1 running and 32 waiting/);
      return true;
    });
    await running;
    assert.deepEqual(
      await Promise.all(queued),
      queued.map(() => 0),
      'those queued are answered',
    );
    assert.equal(await tasks.count(BUSY_CALLER), 0, 'and the lane takes reads again');
  });

  it('drop a read whose caller left while it waited, freeing its place in the lane', async (t) => {
    const { serving } = await openBoth(t);
    const tasks = createTaskStore(serving.kind, serving.db, serving.listingReads);
    const running = serving.listingReads.all(countingTo(serving, SLOW_COUNT));
    const leaving = new AbortController();
    const departed = tasks.count(BUSY_CALLER, leaving.signal);
    const queued = Array.from({ length: LISTING_LANE_WAITING - 1 }, () => tasks.count(BUSY_CALLER));
    await assert.rejects(tasks.count(BUSY_CALLER), /task listings are busy/);
    leaving.abort(new Error('caller gone'));
    await assert.rejects(departed, /caller gone/);
    const last = tasks.count(BUSY_CALLER);
    await running;
    assert.deepEqual(
      await Promise.all([...queued, last]),
      [...queued, last].map(() => 0),
    );
  });

  it('read a usage listing in pages within one turn: no other report runs between two of its pages', async (t) => {
    const { serving } = await openBoth(t);
    await fillLedger(serving);
    const usage = new SqlUsageStore(serving);
    const order: string[] = [];
    const listing = usage.list({}, ROWS).finally(() => order.push('listing'));
    // The lane's queue fills behind the listing; its later pages must not queue behind them.
    const queued = Array.from({ length: REPORT_LANE_WAITING }, () =>
      usage.summarize({}).finally(() => order.push('summary')),
    );
    await assert.rejects(usage.summarize({}), /usage reports are busy/);
    const rows = await listing;
    assert.equal(rows.length, ROWS);
    for (const summary of await Promise.all(queued)) assert.equal(summary[0]?.requests, ROWS);
    assert.equal(order[0], 'listing', `the listing's pages came first: ${order.join(', ')}`);
  });

  it("run a caller's task listing off the event loop too: its count and its offset read every task of the day", async (t) => {
    const { serving, inline } = await openBoth(t);
    await sql`
      insert into tasks (id, request_id, ledger_row_id, owner, token_id, account, issuer, model,
        request, resolve_uploads, state, submitted_at, expires_at)
      with recursive n(i) as (select 0 union all select i + 1 from n where i < ${ROWS - 1})
      select printf('task-%08d', i), printf('req-%08d', i), printf('row-%08d', i), 'tok_busy',
        'tok_busy', 'acme', 'gateway', 'gen-2.7-image-pro', '{}', 0, 'SUCCEEDED', ${FIRST_DAY} + i,
        ${FIRST_DAY + DAY_MS} + i
      from n`.execute(serving.db);
    const filter = BUSY_CALLER;
    const servingTasks = createTaskStore(serving.kind, serving.db, serving.listingReads);
    const inlineTasks = createTaskStore(inline.kind, inline.db, inline.listingReads);
    const lastPage = (tasks: typeof servingTasks) =>
      Promise.all([tasks.count(filter), tasks.list(filter, ROWS - 10, 100)]);

    await servingTasks.count(filter);
    let turns = 0;
    const ticker = setInterval(() => turns++, 1);
    const [count, page] = await lastPage(servingTasks);
    clearInterval(ticker);
    assert.equal(count, ROWS);
    assert.deepEqual(
      page.map((task) => task.id),
      Array.from({ length: 10 }, (_, index) => `task-${String(9 - index).padStart(8, '0')}`),
    );
    assert.deepEqual([count, page], await lastPage(inlineTasks));
    assert.ok(turns >= 2, `the event loop turned ${turns} times during the listing`);
  });

  it("serve a caller's task listing while an admin's report is still running", async (t) => {
    const { serving } = await openBoth(t);
    const report = serving.reportReads.all(countingTo(serving, LONG_COUNT));
    report.catch(() => undefined);
    const tasks = createTaskStore(serving.kind, serving.db, serving.listingReads);
    const filter = BUSY_CALLER;
    const listing = tasks.count(filter).then(
      () => 'answered',
      (error: unknown) => `failed: ${String(error)}`,
    );
    // Behind the report on one lane, the listing would wait seconds; closing ends both.
    const giveUp = new AbortController();
    const waited = sleep(10_000, 'still waiting', { signal: giveUp.signal }).catch(() => '');
    const first = await Promise.race([listing, waited]);
    giveUp.abort();
    await serving.close();
    assert.equal(first, 'answered');
    await assert.rejects(report, 'the report was still running');
  });
});
