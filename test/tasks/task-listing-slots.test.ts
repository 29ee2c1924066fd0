import assert from 'node:assert/strict';
import { silentLog } from '../../src/support/log.js';
import { describe, it } from 'node:test';
import type { TaskReservations } from '../../src/admission/admission.js';
import type { Principal } from '../../src/domain/principal.js';
import type { TaskFilter } from '../../src/domain/task.js';
import { GatewayError } from '../../src/errors/gateway-error.js';
import type { TaskStore } from '../../src/store/task-store.js';
import {
  LISTINGS_PER_CALLER,
  type TaskListQuery,
  TaskService,
} from '../../src/tasks/task-service.js';

const QUERY: TaskListQuery = {
  filter: {
    state: undefined,
    model: undefined,
    tokenId: undefined,
    submittedFrom: undefined,
    submittedUntil: undefined,
  },
  pageNo: 1,
  pageSize: 10,
};
const caller = (tokenId: string, admin = false): Principal => ({
  tokenId,
  account: 'acme',
  admin,
  issuer: 'gateway',
});

/** A store whose listings wait until `answerAll`, as reads queued behind a long one do. */
function slowListings() {
  const waiting: (() => void)[] = [];
  const seen: TaskFilter[] = [];
  const later = <T>(value: T) =>
    new Promise<T>((resolve) => {
      waiting.push(() => resolve(value));
    });
  const store = {
    list: (filter: TaskFilter) => {
      seen.push(filter);
      return later([]);
    },
    count: () => later(0),
  } as unknown as TaskStore;
  return {
    store,
    seen,
    answerAll: () => {
      for (const answer of waiting.splice(0)) answer();
    },
  };
}

function serviceOn(store: TaskStore): TaskService {
  return new TaskService({
    store,
    admission: {} as TaskReservations,
    queueLimit: 10,
    queueLimitPerToken: 10,
    submitted: () => undefined,
    handoverMs: 1000,
    now: Date.now,
    log: silentLog,
  });
}

describe('task listings per caller', () => {
  it(`refuses a caller's listing beyond ${LISTINGS_PER_CALLER} under way with 429 and Retry-After, others' go on`, async () => {
    const { store, answerAll } = slowListings();
    const tasks = serviceOn(store);
    const busy = Array.from({ length: LISTINGS_PER_CALLER }, () =>
      tasks.list(caller('tok_busy'), QUERY),
    );
    await assert.rejects(tasks.list(caller('tok_busy'), QUERY), (error: unknown) => {
      assert.ok(error instanceof GatewayError);
      assert.equal(error.code, 'Throttling.RateQuota');
      assert.equal(error.headers['Retry-After'], '1');
      assert.match(error.message, /2 task listings under way/);
      return true;
    });
    const other = tasks.list(caller('tok_other'), QUERY);
    answerAll();
    await Promise.all([...busy, other]);
    const again = tasks.list(caller('tok_busy'), QUERY);
    answerAll();
    assert.deepEqual(await again, { tasks: [], total: 0 }, 'the slots are given back');
  });

  it('gives the slot back when a listing fails', async () => {
    let fail = true;
    const store = {
      list: async () => {
        if (fail) throw new Error('database gone');
        return [];
      },
      count: async () => 0,
    } as unknown as TaskStore;
    const tasks = serviceOn(store);
    for (let attempt = 0; attempt < LISTINGS_PER_CALLER + 1; attempt++)
      await assert.rejects(tasks.list(caller('tok_a'), QUERY), /database gone/);
    fail = false;
    assert.deepEqual(await tasks.list(caller('tok_a'), QUERY), { tasks: [], total: 0 });
  });

  it('keeps the slot until both reads of a listing are over, though one has failed', async () => {
    const counts: (() => void)[] = [];
    const store = {
      list: async () => {
        throw new Error('the page was refused');
      },
      count: () =>
        new Promise<number>((resolve) => {
          counts.push(() => resolve(0));
        }),
    } as unknown as TaskStore;
    const tasks = serviceOn(store);
    const failing = Array.from({ length: LISTINGS_PER_CALLER }, () =>
      tasks.list(caller('tok_a'), QUERY),
    );
    // Long enough for the failed pages to reach the service.
    await new Promise((resolve) => setImmediate(resolve));
    await assert.rejects(
      tasks.list(caller('tok_a'), QUERY),
      /task listings under way/,
      'the counts still running hold the slots',
    );
    for (const answer of counts.splice(0)) answer();
    for (const listing of failing) await assert.rejects(listing, /the page was refused/);
    const next = tasks.list(caller('tok_a'), QUERY);
    for (const answer of counts.splice(0)) answer();
    await assert.rejects(next, /the page was refused/, 'a slot was free again');
  });

  it('hands the caller-left signal to both reads', async () => {
    const signals: (AbortSignal | undefined)[] = [];
    const store = {
      list: async (_filter: TaskFilter, _offset: number, _limit: number, signal?: AbortSignal) => {
        signals.push(signal);
        return [];
      },
      count: async (_filter: TaskFilter, signal?: AbortSignal) => {
        signals.push(signal);
        return 0;
      },
    } as unknown as TaskStore;
    const callerLeft = new AbortController();
    await serviceOn(store).list(caller('tok_a'), QUERY, callerLeft.signal);
    assert.deepEqual(signals, [callerLeft.signal, callerLeft.signal]);
  });

  it("still lists only the caller's own tasks, and every task for an admin", async () => {
    const { store, seen, answerAll } = slowListings();
    const tasks = serviceOn(store);
    const own = tasks.list(caller('tok_a'), QUERY);
    const all = tasks.list(caller('tok_admin', true), QUERY);
    answerAll();
    await Promise.all([own, all]);
    assert.deepEqual(
      seen.map((filter) => filter.owner),
      ['tok_a', undefined],
    );
  });
});
