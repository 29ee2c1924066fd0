import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TurnQueue } from '../../src/support/turn-queue.js';

const settledState = async (promise: Promise<unknown>): Promise<string> =>
  Promise.race([
    promise.then(
      () => 'granted',
      () => 'refused',
    ),
    new Promise<string>((resolve) => setImmediate(() => resolve('waiting'))),
  ]);

describe('TurnQueue', () => {
  it('grants turns in arrival order as they are given back', async () => {
    const queue = new TurnQueue({ running: 1, waiting: 2, refusal: () => new Error('full') });
    const first = await queue.take();
    const order: string[] = [];
    const second = queue.take().then((turn) => (order.push('second'), turn));
    const third = queue.take().then((turn) => (order.push('third'), turn));
    assert.equal(await settledState(second), 'waiting');
    first.release();
    (await second).release();
    (await third).release();
    assert.deepEqual(order, ['second', 'third']);
  });

  it('refuses one more than it queues with its refusal, at once', async () => {
    const queue = new TurnQueue({ running: 1, waiting: 1, refusal: () => new Error('full') });
    await queue.take();
    const waiting = queue.take();
    await assert.rejects(queue.take(), /^Error: full$/);
    assert.equal(await settledState(waiting), 'waiting', 'the one queued keeps its place');
  });

  it('lets a waiter whose signal aborts leave its place to the next', async () => {
    const queue = new TurnQueue({ running: 1, waiting: 1, refusal: () => new Error('full') });
    const first = await queue.take();
    const leaving = new AbortController();
    const left = queue.take(leaving.signal);
    leaving.abort(new Error('caller gone'));
    await assert.rejects(left, /caller gone/);
    const next = queue.take();
    first.release();
    assert.equal(await settledState(next), 'granted');
  });

  it('refuses every waiter on refuseWaiting, while the turn held runs on', async () => {
    const queue = new TurnQueue({ running: 1, waiting: 3, refusal: () => new Error('full') });
    const held = await queue.take();
    const waiting = [queue.take(), queue.take()];
    queue.refuseWaiting(new Error('closed'));
    for (const waiter of waiting) await assert.rejects(waiter, /closed/);
    held.release();
    held.release();
    await queue.take();
    assert.equal(await settledState(queue.take()), 'waiting', 'a second release gave back nothing');
  });

  it('rejects limits that are not whole numbers', () => {
    assert.throws(
      () => new TurnQueue({ running: 0, waiting: 1, refusal: () => new Error('full') }),
      RangeError,
    );
    assert.throws(
      () => new TurnQueue({ running: 1, waiting: 0.5, refusal: () => new Error('full') }),
      RangeError,
    );
  });
});
