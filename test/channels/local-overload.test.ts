import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { ReloadableRouter } from '../../src/channels/reloadable-router.js';
import type { EngineJob, EngineOutput, EngineRun, PngImage } from '../../src/engine/engine.js';
import type { EngineTurn, TurnTakingEngine } from '../../src/engine/local/engine-turns.js';
import { LocalEngine } from '../../src/engine/local/local-engine.js';
import { GatewayError } from '../../src/errors/gateway-error.js';
import {
  channels,
  jobFor,
  MODEL_A,
  requestBody,
  routerFor,
  temporaryStorage,
} from './channel-fixtures.js';
import { asAbortSignal } from '../../src/support/cancellation.js';
import { answersAtOnce, outputOf } from '../../src/engine/engine-run.js';

type Storage = Awaited<ReturnType<typeof temporaryStorage>>;

const ONE_PIXEL: EngineOutput<PngImage> = {
  images: [{ kind: 'png', bytes: Buffer.from('png') }],
  width: 1,
  height: 1,
};

/**
 * A turn-taking engine whose turns the test hands out, one by one; once a job has its turn it
 * renders at once, or, with `hangOnceStarted`, until its signal aborts.
 */
class GatedEngine implements TurnTakingEngine<PngImage> {
  private readonly gates: (() => void)[] = [];
  private waited: (() => void) | undefined;
  private rendering: (() => void) | undefined;

  constructor(private readonly hangOnceStarted = false) {}

  /** Settles once a job waits for its turn. */
  nextWait(): Promise<void> {
    return new Promise((resolve) => (this.waited = resolve));
  }

  /** Settles once a job that has its turn starts rendering. */
  nextRender(): Promise<void> {
    return new Promise((resolve) => (this.rendering = resolve));
  }

  grantTurn(): void {
    this.gates.shift()?.();
  }

  waitForTurn(signal: AbortSignal): Promise<EngineTurn<PngImage>> {
    return new Promise((resolve, reject) => {
      signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
      this.gates.push(() => resolve({ generate: (job) => this.render(job) }));
      this.waited?.();
    });
  }

  async *generate(job: EngineJob): EngineRun<PngImage> {
    return yield* (await this.waitForTurn(asAbortSignal(job.signal))).generate(job);
  }

  private render(job: EngineJob): EngineRun<PngImage> {
    return answersAtOnce(() => {
      this.rendering?.();
      if (!this.hangOnceStarted) return Promise.resolve(ONE_PIXEL);
      return new Promise((_resolve, reject) => {
        job.signal.addEventListener('abort', () => reject(job.signal.reason as Error));
      });
    });
  }
}

async function outcomeOf(promise: Promise<unknown>): Promise<'served' | GatewayError> {
  try {
    await promise;
    return 'served';
  } catch (error) {
    if (error instanceof GatewayError) return error;
    throw error;
  }
}

describe('the local channel under load', () => {
  let storage: Storage;
  const routers: ReloadableRouter[] = [];
  before(async () => {
    storage = await temporaryStorage();
  });
  after(async () => {
    await Promise.all(routers.map((router) => router.close()));
    await storage.dispose();
  });

  const localRouter = (
    engine: TurnTakingEngine<PngImage>,
    fields: Record<string, unknown> = {},
    deadlineMs = 60_000,
  ) => {
    const router = routerFor(channels([{ name: 'local', type: 'local', ...fields }]), {
      storage,
      deadlineMs,
      localEngine: () => engine,
    });
    routers.push(router);
    return router;
  };
  const health = (router: ReloadableRouter) => {
    const status = router.status()[0];
    assert.ok(status !== undefined);
    return {
      state: status.breaker.state,
      consecutiveFailures: status.breaker.consecutiveFailures,
      failures: status.stats.failures,
    };
  };
  const HEALTHY = { state: 'closed', consecutiveFailures: 0, failures: 0 };

  it('turns a flood away at once with 503 Overloaded and Retry-After, and the channel stays healthy', async () => {
    const engine = new LocalEngine({ workers: 1, queueLimit: 2 });
    try {
      const router = localRouter(engine, { breaker_threshold: 1 });
      const outcomes = await Promise.all(
        Array.from({ length: 12 }, () =>
          outcomeOf(outputOf(router.generate(jobFor(requestBody(MODEL_A, { size: '1K' }))))),
        ),
      );
      const refused = outcomes.filter((outcome) => outcome !== 'served');
      assert.equal(outcomes.length - refused.length, 4, 'two running and two waiting are served');
      for (const error of refused) {
        assert.deepEqual(
          [error.status, error.code, error.headers['retry-after']],
          [503, 'Overloaded', '1'],
        );
        assert.match(error.message, /local: the local engine is busy/);
      }
      assert.deepEqual(health(router), HEALTHY);
      assert.equal(
        await outcomeOf(outputOf(router.generate(jobFor(requestBody(MODEL_A, { size: '1K' }))))),
        'served',
      );
    } finally {
      await engine.close();
    }
  });

  it('starts the time-out when the job gets its turn, not while it waits for one', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const engine = new GatedEngine();
    const router = localRouter(engine, { timeout_ms: 100, breaker_threshold: 1 });
    const waiting = engine.nextWait();
    const request = outputOf(router.generate(jobFor(requestBody(MODEL_A))));
    await waiting;
    t.mock.timers.tick(5_000);
    engine.grantTurn();
    assert.equal(await outcomeOf(request), 'served');
    assert.deepEqual(health(router), HEALTHY);
  });

  it('still times out a job that has its turn and runs too long, as a failure of the channel', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const engine = new GatedEngine(true);
    const router = localRouter(engine, { timeout_ms: 100, breaker_threshold: 1 });
    const waiting = engine.nextWait();
    const request = outcomeOf(outputOf(router.generate(jobFor(requestBody(MODEL_A)))));
    await waiting;
    t.mock.timers.tick(5_000);
    const rendering = engine.nextRender();
    engine.grantTurn();
    await Promise.race([rendering, request]);
    t.mock.timers.tick(100);
    const error = await request;
    assert.ok(error !== 'served');
    assert.equal(error.code, 'ModelUnavailable');
    assert.match(error.message, /local: timed out \(limit 100 ms\)/);
    assert.equal(health(router).failures, 1);
  });

  it('answers 503 Overloaded when the routing deadline passes while the job waits, without blaming the channel', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const engine = new GatedEngine();
    const router = localRouter(engine, { timeout_ms: 100, breaker_threshold: 1 }, 1_000);
    const waiting = engine.nextWait();
    const request = outcomeOf(outputOf(router.generate(jobFor(requestBody(MODEL_A)))));
    await waiting;
    t.mock.timers.tick(1_000);
    const error = await request;
    assert.ok(error !== 'served');
    assert.deepEqual([error.status, error.code], [503, 'Overloaded']);
    assert.match(error.message, /local: the request ran out of time waiting for a turn/);
    assert.ok(Number(error.headers['retry-after']) >= 1);
    assert.deepEqual(health(router), HEALTHY);
  });
});
