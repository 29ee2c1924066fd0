import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { TaskReservations } from '../../src/admission/admission.js';
import type { TokenStanding } from '../../src/auth/authenticator.js';
import { MODEL_B } from '../../src/domain/models.js';
import type { TaskRecord } from '../../src/domain/task.js';
import type { GenerationService } from '../../src/generation/generation-service.js';
import type { TaskStore } from '../../src/store/task-store.js';
import { silentLog } from '../../src/support/log.js';
import { TaskRunner } from '../../src/tasks/task-runner.js';
import { eventually } from '../faults/fault-rig.js';

/** Renewed every second: a retry that waited for the next beat would come a second later. */
const LEASE_MS = 3000;
const FAILED_RENEWALS = 2;

function runningTask(now: number): TaskRecord {
  return {
    id: 'task-1',
    requestId: 'request-1',
    ledgerRowId: 'row-1',
    owner: 'tok_1',
    tokenId: 'tok_1',
    account: 'acme',
    issuer: 'gateway',
    model: MODEL_B,
    request: JSON.stringify({
      model: MODEL_B,
      input: { messages: [{ role: 'user', content: [{ text: 'a quiet bay' }] }] },
    }),
    workspace: undefined,
    resolveUploads: false,
    reservationId: undefined,
    state: 'RUNNING',
    submittedAt: now,
    scheduledAt: now,
    endedAt: undefined,
    result: undefined,
    errorCode: undefined,
    errorMessage: undefined,
    runner: undefined,
    leaseUntil: now + LEASE_MS,
    expiresAt: now + 86_400_000,
  };
}

it('a lease renewal that fails is tried again within the lease, not a beat later', async (t) => {
  const renewals: { at: number; ok: boolean }[] = [];
  let claimed = false;
  const store = {
    claim: async (_runner: string, now: number) => {
      if (claimed) return undefined;
      claimed = true;
      return runningTask(now);
    },
    renewLeases: async () => {
      const ok = renewals.length >= FAILED_RENEWALS;
      renewals.push({ at: Date.now(), ok });
      if (!ok) throw new Error('Connection terminated unexpectedly');
    },
    renewReservations: async () => undefined,
    lapsed: async () => [],
    deleteExpired: async () => 0,
    end: async () => true,
  } as unknown as TaskStore;
  // The task runs until the runner stops it.
  const generation = {
    generate: (_request: unknown, context: { signal: AbortSignal }) =>
      new Promise((_resolve, reject) => {
        context.signal.addEventListener('abort', () => reject(context.signal.reason as Error));
      }),
  } as unknown as GenerationService;
  const runner = new TaskRunner({
    store,
    generation,
    admission: { releaseReserved: async () => undefined } as unknown as TaskReservations,
    tokens: { checkStanding: async () => undefined } as TokenStanding,
    concurrency: 1,
    pollMs: 60_000,
    leaseMs: LEASE_MS,
    reservationTtlMs: 60_000,
    now: Date.now,
    log: silentLog,
  });
  t.after(() => runner.stop(0));
  runner.start();

  await eventually(() => renewals.some((renewal) => renewal.ok), 20_000, 'a renewal succeeds');
  const [firstFailure, , success] = renewals;
  assert.deepEqual(
    renewals.map((renewal) => renewal.ok),
    [false, false, true],
  );
  const retriedWithinMs = Number(success?.at) - Number(firstFailure?.at);
  assert.ok(
    retriedWithinMs < LEASE_MS / 3,
    `renewed ${retriedWithinMs} ms after the first failure, before the next beat`,
  );
});
