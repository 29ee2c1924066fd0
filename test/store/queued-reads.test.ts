import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { type Compilable, sql } from 'kysely';
import { GatewayError } from '../../src/errors/gateway-error.js';
import { DEFAULT_DATABASE_LIMITS, openDatabase } from '../../src/store/database/database.js';
import type { ReadRunner } from '../../src/store/database/long-reads.js';
import { QueuedReads } from '../../src/store/database/queued-reads.js';
import { postgresTarget } from '../helpers/postgres.js';

const QUERY = {} as Compilable<{ n: number }>;

/** Where the reads run, under the test's control: each read waits until answered. */
function heldReads() {
  const pending: (() => void)[] = [];
  let running = 0;
  let most = 0;
  let closed = false;
  const inner: ReadRunner = {
    all: async <Row>() => {
      running += 1;
      most = Math.max(most, running);
      await new Promise<void>((resolve) => pending.push(resolve));
      running -= 1;
      return [] as Row[];
    },
    close: async () => {
      closed = true;
    },
  };
  return {
    inner,
    answerOne: () => pending.shift()?.(),
    get running() {
      return running;
    },
    get most() {
      return most;
    },
    get closed() {
      return closed;
    },
  };
}

const turns = () => new Promise((resolve) => setImmediate(resolve));

describe('QueuedReads', () => {
  it('runs at most `running` reads at once and queues `waiting`, refusing one more with 503', async () => {
    const where = heldReads();
    const lane = new QueuedReads(where.inner, {
      busy: 'test reads are busy',
      running: 2,
      waiting: 3,
    });
    const reads = Array.from({ length: 5 }, () => lane.all(QUERY));
    await turns();
    assert.equal(where.running, 2);
    await assert.rejects(lane.all(QUERY), (error: unknown) => {
      assert.ok(error instanceof GatewayError);
      assert.equal(error.code, 'Overloaded');
      assert.equal(error.headers['Retry-After'], '1');
      assert.match(error.message, /^test reads are busy: 2 running and 3 waiting/);
      return true;
    });
    for (let answered = 0; answered < 5; answered++) {
      where.answerOne();
      await turns();
    }
    await Promise.all(reads);
    assert.equal(where.most, 2);
  });

  it('holds one turn for all the reads of `inOneTurn`', async () => {
    const where = heldReads();
    const lane = new QueuedReads(where.inner, { busy: 'busy', running: 1, waiting: 2 });
    const order: string[] = [];
    const paged = lane.inOneTurn(async (read) => {
      await read(QUERY);
      order.push('page 1');
      await read(QUERY);
      order.push('page 2');
    });
    const other = lane.all(QUERY).then(() => order.push('other'));
    for (let answered = 0; answered < 3; answered++) {
      await turns();
      where.answerOne();
    }
    await Promise.all([paged, other]);
    assert.deepEqual(order, ['page 1', 'page 2', 'other']);
  });

  it("drops a waiting read whose caller left; at close refuses those waiting and closes what's under it", async () => {
    const where = heldReads();
    const lane = new QueuedReads(where.inner, { busy: 'busy', running: 1, waiting: 2 });
    const running = lane.all(QUERY);
    const leaving = new AbortController();
    const departed = lane.all(QUERY, leaving.signal);
    const waiting = lane.all(QUERY);
    leaving.abort(new Error('caller gone'));
    await assert.rejects(departed, /caller gone/);
    await lane.close();
    await assert.rejects(waiting, /shutting down/);
    await assert.rejects(lane.all(QUERY), /shutting down/);
    assert.equal(where.closed, true);
    where.answerOne();
    await running;
  });
});

describe('long reads on PostgreSQL', () => {
  it('take one connection for reports and a quarter of the pool for listings, leaving the rest to requests', async (t: TestContext) => {
    const target = await postgresTarget(t);
    if (target === undefined) return;
    // A pool of 4: one for a report, one for listings, two for the request path.
    const database = await openDatabase(target, {
      limits: { ...DEFAULT_DATABASE_LIMITS, poolSize: 4 },
    });
    t.after(() => database.close());
    const clock = sql<{
      at: number;
    }>`select (extract(epoch from clock_timestamp()) * 1000)::float8 as at`;
    const sleeper = sql<{
      at: number;
    }>`select (extract(epoch from clock_timestamp()) * 1000)::float8 as at, pg_sleep(0.2)`;
    const compiled = { compile: () => sleeper.compile(database.db) };
    const listings = Array.from({ length: 4 }, () => database.listingReads.all(compiled));
    const reports = Array.from({ length: 3 }, () => database.reportReads.all(compiled));
    // Meanwhile a request's statement runs at once, not after a sleep: by the server's clock.
    const [request] = (await clock.execute(database.db)).rows;
    const startsOf = async (reads: Promise<{ at: number }[]>[]) =>
      (await Promise.all(reads))
        .flat()
        .map((row) => row.at)
        .sort((a, b) => a - b);
    const listingStarts = await startsOf(listings);
    const reportStarts = await startsOf(reports);
    const firstStart = Math.min(listingStarts[0] as number, reportStarts[0] as number);
    assert.ok(
      (request?.at ?? Infinity) - firstStart < 190,
      `the request's statement ran ${Math.round((request?.at ?? Infinity) - firstStart)} ms after the first long read began`,
    );
    // One at a time in each lane: each read begins at least one sleep after the one before.
    for (const starts of [listingStarts, reportStarts])
      for (const [index, start] of starts.entries())
        if (index > 0)
          assert.ok(start - (starts[index - 1] as number) >= 190, `two reads of a lane overlapped`);
  });
});
