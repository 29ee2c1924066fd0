import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { MODEL_A } from '../../src/domain/models.js';
import type { TokenLimitChanges } from '../../src/domain/token-limits.js';
import type { DatabaseTarget } from '../../src/store/database/database.js';
import { BACKENDS } from '../helpers/database-backends.js';
import { DashScopeSdk, type SdkResponse } from '../helpers/dashscope-sdk.js';
import { startTestGateway } from '../helpers/test-gateway.js';

const MESSAGES = [{ role: 'user', content: [{ text: 'a lighthouse' }] }];

/** A gateway whose runner takes no task, so that every accepted submission stays PENDING. */
async function queueOnly(t: TestContext, target: DatabaseTarget, env: Record<string, string>) {
  const gateway = await startTestGateway({
    database: target,
    env: { IMAGEGATE_TASK_CONCURRENCY: '0', IMAGEGATE_SHUTDOWN_TIMEOUT_MS: '0', ...env },
  });
  t.after(() => gateway.close());
  const base = `${await gateway.listen()}/vendor/api/v1`;
  return {
    gateway,
    /** A caller whose submissions reserve quota, as most do: work between the check and the insert. */
    caller: async (limits: TokenLimitChanges = {}) => {
      const { token, record } = await gateway.services.tokenIssuer.issue({
        name: 'queue',
        account: 'queue-co',
        admin: false,
        expiresInSeconds: undefined,
      });
      await gateway.admission.limits.update(record.id, { imageQuota: 1000, ...limits });
      return new DashScopeSdk(base, token);
    },
  };
}

/** `count` submissions sent at once, each on its own connection. */
function submitAtOnce(sdk: DashScopeSdk, count: number): Promise<SdkResponse[]> {
  return Promise.all(Array.from({ length: count }, () => sdk.asyncCall(MODEL_A, MESSAGES)));
}

function tally(answers: readonly SdkResponse[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const answer of answers) {
    const key = answer.status_code === 200 ? '200' : `${answer.status_code} ${answer.code}`;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

for (const [backend, targetFor] of BACKENDS) {
  describe(`the task queue's bounds hold under concurrency (${backend})`, () => {
    it('60 simultaneous submissions against IMAGEGATE_TASK_QUEUE_LIMIT=5 accept exactly 5', async (t) => {
      const target = await targetFor(t);
      if (target === undefined) return;
      const { caller } = await queueOnly(t, target, { IMAGEGATE_TASK_QUEUE_LIMIT: '5' });
      const answers = await submitAtOnce(await caller(), 60);
      assert.deepEqual(tally(answers), { '200': 5, '503 Overloaded': 55 });
      const full = answers.find((answer) => answer.status_code === 503);
      assert.match(String(full?.message), /task queue is full \(5 tasks waiting\)/);
      assert.equal(full?.headers.get('retry-after'), '5');
    });

    it("one token at its own bound is refused 429, and another token's submission is accepted", async (t) => {
      const target = await targetFor(t);
      if (target === undefined) return;
      const { caller } = await queueOnly(t, target, {
        IMAGEGATE_TASK_QUEUE_LIMIT: '10',
        IMAGEGATE_TASK_QUEUE_LIMIT_PER_TOKEN: '4',
      });
      const flooder = await caller();
      const answers = await submitAtOnce(flooder, 30);
      assert.deepEqual(tally(answers), { '200': 4, '429 Throttling.RateQuota': 26 });
      const refused = answers.find((answer) => answer.status_code === 429);
      assert.match(String(refused?.message), /this token has 4 tasks waiting, the most it may/);
      assert.equal(refused?.headers.get('retry-after'), '5');

      const other = await submitAtOnce(await caller(), 3);
      assert.deepEqual(tally(other), { '200': 3 });
    });

    it("a token's own limit overrides the setting, either way", async (t) => {
      const target = await targetFor(t);
      if (target === undefined) return;
      const { caller } = await queueOnly(t, target, {
        IMAGEGATE_TASK_QUEUE_LIMIT: '50',
        IMAGEGATE_TASK_QUEUE_LIMIT_PER_TOKEN: '4',
      });
      assert.deepEqual(tally(await submitAtOnce(await caller({ maxPendingTasks: 2 }), 10)), {
        '200': 2,
        '429 Throttling.RateQuota': 8,
      });
      assert.deepEqual(tally(await submitAtOnce(await caller({ maxPendingTasks: 7 }), 10)), {
        '200': 7,
        '429 Throttling.RateQuota': 3,
      });
    });
  });
}
