import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { EngineJob } from '../../src/engine/engine.js';
import { outputOf, stopEarly } from '../../src/engine/engine-run.js';
import { LocalEngine } from '../../src/engine/local/local-engine.js';
import { planRender } from '../../src/engine/local/render-plan.js';
import { eventually, quietFor } from '../helpers/waits.js';
import { body, jobFor, MODEL_A } from './engine-fixtures.js';
import { watchRenders } from './render-watch.js';

/** A sequential group of model A whose plan gives `count` images. */
function sequentialGroup(count: number, signal?: AbortSignal): EngineJob {
  const parameters = { size: '1K', enable_sequential: true, n: 4 };
  for (let seed = 0; seed < 200; seed++) {
    const job = jobFor(body(MODEL_A, 'a lighthouse at dusk', parameters), {
      seed,
      ...(signal === undefined ? {} : { signal }),
    });
    if (planRender(job).imageCount === count) return job;
  }
  throw new Error(`no seed below 200 gives a group of ${count}`);
}

describe('the local engine as a run of images', () => {
  let engine: LocalEngine;
  before(() => {
    engine = new LocalEngine({ workers: 1 });
  });
  after(() => engine.close());

  it('yields a sequential group image by image, each before the next is rendered, then returns the whole output', async (t) => {
    const renders = watchRenders(t, engine);
    const run = engine.generate(sequentialGroup(3));
    const yielded = [];
    for (let step = await run.next(); ; step = await run.next()) {
      if (step.done === true) {
        assert.deepEqual(
          step.value.images,
          yielded.map(({ image }) => image),
          'the output holds the images yielded, in order',
        );
        break;
      }
      assert.deepEqual(
        renders,
        { started: step.value.index + 1, running: 0 },
        `image ${step.value.index} is out before the next one is sent to the pool`,
      );
      yielded.push(step.value);
    }
    assert.deepEqual(
      yielded.map(({ index }) => index),
      [0, 1, 2],
    );
  });

  it('leaves no render running, its turn given back and no rejection unheard, when its caller stops after the first image', async (t) => {
    const unheard: unknown[] = [];
    const listener = (reason: unknown) => unheard.push(reason);
    process.on('unhandledRejection', listener);
    t.after(() => process.off('unhandledRejection', listener));
    const renders = watchRenders(t, engine);

    const run = engine.generate(sequentialGroup(4));
    const first = await run.next();
    assert.equal(first.done, false);
    await stopEarly(run);

    assert.deepEqual(renders, { started: 1, running: 0 }, 'no second image was sent to the pool');
    assert.deepEqual(engine.jobs(), { running: 0, waiting: 0 }, 'the turn is given back');
    assert.deepEqual(await run.next(), { done: true, value: undefined }, 'the run is over');
    await quietFor(200, 'no rejection of the stopped run surfaces later');
    assert.deepEqual(unheard, []);
    const again = await outputOf(engine.generate(sequentialGroup(2)));
    assert.equal(again.images.length, 2, 'the engine serves on');
  });

  it('stops the render under way and gives its turn back when the signal aborts between images', async (t) => {
    const caller = new AbortController();
    // The abort lands the turn after the second render is handed to the pool: long before a
    // worker can have rendered and encoded a 1K image, so it always finds that render under way.
    const renders = watchRenders(t, engine, async (index) => {
      if (index === 1) setImmediate(() => caller.abort(new Error('the delivery stopped')));
    });
    const run = engine.generate(sequentialGroup(4, caller.signal));
    await run.next();
    await assert.rejects(run.next(), /the delivery stopped/);
    assert.equal(renders.started, 2, 'the second image was sent to the pool');
    await eventually(() => renders.running === 0, 5_000, 'the pool idle');
    assert.equal(renders.started, 2, 'nothing rendered after the abort');
    assert.deepEqual(engine.jobs(), { running: 0, waiting: 0 });
  });
});
