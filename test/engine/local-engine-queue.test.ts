import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LocalEngine } from '../../src/engine/local/local-engine.js';
import { GatewayError } from '../../src/errors/gateway-error.js';
import { body, jobFor, MODEL_A } from './engine-fixtures.js';
import { outputOf } from '../../src/engine/engine-run.js';

type Settled = { index: number; outcome: 'served' | string };

/** Starts every job at once; the order in which they settle, and how. */
async function settleOrder(engine: LocalEngine, signals: AbortSignal[]): Promise<Settled[]> {
  const order: Settled[] = [];
  await Promise.all(
    signals.map((signal, index) =>
      outputOf(
        engine.generate(jobFor(body(MODEL_A, `job ${index}`, { size: '1K' }), { signal })),
      ).then(
        () => order.push({ index, outcome: 'served' }),
        (error: unknown) =>
          order.push({
            index,
            outcome: error instanceof GatewayError ? error.code : String(error),
          }),
      ),
    ),
  );
  return order;
}

const signals = (count: number) =>
  Array.from({ length: count }, () => new AbortController().signal);

describe('LocalEngine queue', () => {
  it('refuses a job at once with 503 Overloaded and Retry-After when every turn is taken and the queue is full', async () => {
    // One worker: two jobs run, two wait, the rest are refused.
    const engine = new LocalEngine({ workers: 1, queueLimit: 2 });
    try {
      const order = await settleOrder(engine, signals(10));
      const refused = order.filter((each) => each.outcome !== 'served');
      assert.deepEqual(
        refused.map((each) => [each.index, each.outcome]),
        [4, 5, 6, 7, 8, 9].map((index) => [index, 'Overloaded']),
      );
      assert.deepEqual(
        order.slice(0, refused.length),
        refused,
        'refused before any job was rendered',
      );

      const afterwards = await outputOf(
        engine.generate(jobFor(body(MODEL_A, 'again', { size: '1K' }))),
      );
      assert.equal(afterwards.images.length, 1, 'served again once the flood is over');
    } finally {
      await engine.close();
    }
  });

  it('answers Overloaded with its status and a Retry-After', async () => {
    const engine = new LocalEngine({ workers: 1, queueLimit: 0 });
    try {
      const held = await Promise.all([
        engine.waitForTurn(new AbortController().signal),
        engine.waitForTurn(new AbortController().signal),
      ]);
      await assert.rejects(
        outputOf(engine.generate(jobFor(body(MODEL_A, 'x', { size: '1K' })))),
        (error) =>
          error instanceof GatewayError &&
          error.status === 503 &&
          error.code === 'Overloaded' &&
          error.headers['Retry-After'] === '1',
      );
      await Promise.all(held.map((turn) => outputOf(turn.generate(jobFor(body(MODEL_A, 'x'))))));
    } finally {
      await engine.close();
    }
  });

  it('lets a waiting job whose caller leaves give up its place', async () => {
    const engine = new LocalEngine({ workers: 1, queueLimit: 1 });
    try {
      const leaving = new AbortController();
      const [first, second] = [
        engine.waitForTurn(new AbortController().signal),
        engine.waitForTurn(new AbortController().signal),
      ];
      const waiting = engine.waitForTurn(leaving.signal);
      leaving.abort(new Error('caller disconnected'));
      await assert.rejects(waiting, /caller disconnected/);
      const next = engine.waitForTurn(new AbortController().signal);
      for (const turn of await Promise.all([first, second])) {
        await outputOf(turn.generate(jobFor(body(MODEL_A, 'x', { size: '768*768' }))));
      }
      await outputOf((await next).generate(jobFor(body(MODEL_A, 'x', { size: '768*768' }))));
    } finally {
      await engine.close();
    }
  });

  it('refuses the jobs still waiting when it closes', async () => {
    const engine = new LocalEngine({ workers: 1 });
    const held = await Promise.all([
      engine.waitForTurn(new AbortController().signal),
      engine.waitForTurn(new AbortController().signal),
    ]);
    const waiting = engine.waitForTurn(new AbortController().signal);
    const closed = engine.close();
    await assert.rejects(waiting, /closed/);
    await Promise.all(
      held.map((turn) => outputOf(turn.generate(jobFor(body(MODEL_A, 'x')))).catch(() => 0)),
    );
    await closed;
  });
});
