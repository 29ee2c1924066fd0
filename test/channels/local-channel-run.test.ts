import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ReloadableRouter } from '../../src/channels/reloadable-router.js';
import type { Engine, PngImage } from '../../src/engine/engine.js';
import { answersAtOnce, outputOf, stopEarly } from '../../src/engine/engine-run.js';
import { LocalEngine } from '../../src/engine/local/local-engine.js';
import { GatewayError } from '../../src/errors/gateway-error.js';
import { watchRenders } from '../engine/render-watch.js';
import {
  channels,
  jobFor,
  MODEL_A,
  requestBody,
  routerFor,
  temporaryStorage,
} from './channel-fixtures.js';

describe('a router run over the local channel', () => {
  let storage: Awaited<ReturnType<typeof temporaryStorage>>;
  let engine: LocalEngine;
  let router: ReloadableRouter;
  let failNext = false;
  let clock = 1_000_000;

  before(async () => {
    storage = await temporaryStorage();
    engine = new LocalEngine({ workers: 1 });
    const local = engine;
    // The engine fails its next job when told to, so that the channel's breaker can be opened.
    const failing: Engine<PngImage> = {
      generate: (job) => {
        if (!failNext) return local.generate(job);
        failNext = false;
        return answersAtOnce(() => Promise.reject(new GatewayError('InternalError', 'broke')));
      },
    };
    router = routerFor(
      channels([
        { name: 'local', type: 'local', breaker_threshold: 1, breaker_cooldown_ms: 1_000 },
      ]),
      { storage, localEngine: () => failing, now: () => clock },
    );
  });
  after(async () => {
    await router.close();
    await engine.close();
    await storage.dispose();
  });

  it('stopped after its first image, leaves no render running, no turn held, and its breaker trial given back', async (t) => {
    failNext = true;
    await assert.rejects(outputOf(router.generate(jobFor(requestBody(MODEL_A)))));
    assert.equal(router.status()[0]?.breaker.state, 'open');
    clock += 1_000;
    assert.equal(router.status()[0]?.breaker.state, 'half-open');

    const renders = watchRenders(t, engine);
    const run = router.generate(jobFor(requestBody(MODEL_A, { size: '1K', n: 4 })));
    const first = await run.next();
    assert.equal(first.done, false);
    assert.equal(first.value?.index, 0);
    await stopEarly(run);

    assert.deepEqual(renders, { started: 1, running: 0 });
    assert.deepEqual(engine.jobs(), { running: 0, waiting: 0 });
    const [status] = router.status();
    assert.equal(status?.stats.inFlight, 0, 'the attempt is over');
    assert.equal(status?.breaker.state, 'half-open', 'a stopped run is no verdict on the channel');
    // The trial was given back: the next request is let through as the breaker's trial.
    const served = await outputOf(router.generate(jobFor(requestBody(MODEL_A, { size: '1K' }))));
    assert.equal(served.channel, 'local');
  });
});
