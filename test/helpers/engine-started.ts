import type { TestContext } from 'node:test';
import type { EngineJob, EngineRun } from '../../src/engine/engine.js';
import { type FakeEngine, gate } from './billing-gateway.js';

/**
 * Resolves once the fake engine has been handed its next job: the request has then passed
 * admission and holds what it took there (its concurrency slot, its Idempotency-Key).
 */
export function engineStarted(t: TestContext, engine: FakeEngine): Promise<void> {
  const started = gate();
  const generate = engine.generate.bind(engine);
  t.mock.method(engine, 'generate', (job: EngineJob): EngineRun => {
    started.open();
    return generate(job);
  });
  return started.promise;
}
