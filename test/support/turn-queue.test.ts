import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GatewayError } from '../../src/errors/gateway-error.js';
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
    const queue = new TurnQueue({ running: 1, waiting: 2, busy: 'the lane is busy' });
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

  it('refuses one more than it queues with 503 Overloaded, Retry-After and what is busy', async () => {
    const queue = new TurnQueue({ running: 1, waiting: 1, busy: 'task listings are busy' });
    await queue.take();
    void queue.take();
    await assert.rejects(queue.take(), (error: unknown) => {
      assert.ok(error instanceof GatewayError);
      assert.equal(error.code, 'Overloaded');
      assert.equal(error.headers?.['Retry-After'], '1');
      assert.match(error.message, /^task listings are busy: 1 running and 1 waiting/);
      return true;
    });
  });

  it('lets a waiter whose signal aborts leave its place to the next', async () => {
    const queue = new TurnQueue({ running: 1, waiting: 1, busy: 'the lane is busy' });
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
    const queue = new TurnQueue({ running: 1, waiting: 3, busy: 'the lane is busy' });
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
    assert.throws(() => new TurnQueue({ running: 0, waiting: 1, busy: 'x' }), RangeError);
    assert.throws(() => new TurnQueue({ running: 1, waiting: 0.5, busy: 'x' }), RangeError);
  });
});
