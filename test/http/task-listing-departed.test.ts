import assert from 'node:assert/strict';
import { request } from 'node:http';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import type { LongReads } from '../../src/store/database/long-reads.js';
import { startTestGateway } from '../helpers/test-gateway.js';
import { eventually } from '../helpers/waits.js';

/** Reads the lane of task listings queues behind the running one (src/store/database/database.ts). */
const LISTING_LANE_WAITING = 32;

describe('a task listing whose caller leaves while it waits', () => {
  it('leaves the queue of listings, which takes as many others as before', async (t) => {
    const gateway = await startTestGateway();
    t.after(() => gateway.close());
    const url = new URL(`${await gateway.listen()}/api/v1/tasks`);
    const authorization = await gateway.bearer();
    const lane = gateway.services.database.listingReads;
    const db = gateway.services.database.db;
    // A read of about a second holds the lane while the caller comes and goes.
    const long = sql`with recursive n(i) as (select 0 union all select i + 1 from n where i < 5000000) select count(*) as c from n`;
    const running = lane.all({ compile: () => long.compile(db) });

    const listing = readsOf(lane);

    const caller = request(url, { headers: { authorization } });
    caller.on('error', () => undefined);
    caller.end();
    await eventually(() => listing.asked > 0, 10_000, "the listing's reads queued");
    caller.destroy();
    await eventually(() => listing.pending === 0, 10_000, "the listing's reads dropped");

    const one = sql<{ one: number }>`select 1 as one`;
    const others = Array.from({ length: LISTING_LANE_WAITING }, () =>
      lane.all({ compile: () => one.compile(db) }),
    );
    const outcomes = await Promise.allSettled([running, ...others]);
    assert.deepEqual(
      outcomes.map((outcome) => outcome.status),
      outcomes.map(() => 'fulfilled'),
      'none refused: the departed listing gave its places back',
    );
  });
});

/** Counts the reads asked of `lane` from now on, and those not yet answered or dropped. */
function readsOf(lane: LongReads): { readonly asked: number; readonly pending: number } {
  const counts = { asked: 0, pending: 0 };
  const all = lane.all.bind(lane);
  lane.all = (query, signal) => {
    counts.asked += 1;
    counts.pending += 1;
    const read = all(query, signal);
    const settle = () => {
      counts.pending -= 1;
    };
    read.then(settle, settle);
    return read;
  };
  return counts;
}
