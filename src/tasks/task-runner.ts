import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { taskLabels } from './task-labels.js';
import { randomUUID } from 'node:crypto';
import type {
  AdmissionRequest,
  AdmissionTicket,
  TaskReservations,
} from '../admission/admission.js';
import type { TokenStanding } from '../auth/authenticator.js';
import type { GenerationRequest } from '../domain/generation-request.js';
import type { TaskRecord } from '../domain/task.js';
import type { GatewayError } from '../errors/gateway-error.js';
import type { GenerationService } from '../generation/generation-service.js';
import { LEDGER_CODES } from '../errors/error-table.js';
import {
  describe,
  describeRefused,
  emptyOutcome,
  type GenerationOutcome,
  type RequestDescription,
} from '../ledger/generation-outcome.js';
import { usageRowOf } from '../ledger/usage-row-of.js';
import type { TaskExpectation, TaskStore } from '../store/task-store.js';
import { purgeInBatches } from '../support/batched-purge.js';
import { Heartbeat } from '../support/heartbeat.js';
import type { Log } from '../support/log.js';
import { validateRequest } from '../validate/validate-request.js';
import {
  runnerLost,
  shutDownMidTask,
  taskFailureOf,
  TaskClaimLost,
  tokenStandingLost,
  unannounced,
} from './task-failure.js';
import { principalOfTask } from './task-owner.js';
import { TASK_RESULT_TTL_MS } from './task-service.js';

export interface TaskRunnerOptions {
  store: TaskStore;
  generation: GenerationService;
  admission: TaskReservations;
  /** Whether the token a task was submitted with may still act when the task is claimed. */
  tokens: TokenStanding;
  /** Tasks this node runs at once; 0 runs none (the node still recovers and renews). */
  concurrency: number;
  pollMs: number;
  /** How long a claim outlives a runner that stopped renewing it. */
  leaseMs: number;
  /** The quota reservations' lease: unfinished tasks' reservations are renewed every third of it. */
  reservationTtlMs: number;
  now: () => number;
  log: Log;
}

/** Lapsed tasks ended per pass; the rest wait for the next one. */
const RECOVERIES_PER_PASS = 100;
/** How often finished tasks past their expiry are deleted. */
const SWEEP_EVERY_MS = 60_000;
/** A failed lease renewal is tried again after this, then after twice as long, up to the last. */
const FIRST_RENEWAL_RETRY_MS = 50;
const LAST_RENEWAL_RETRY_MS = 1000;

interface Running {
  abort: AbortController;
  done: Promise<void>;
  /** Until when the database holds the task's lease, as this node last set it. */
  leaseUntil: number;
}

/**
 * Runs asynchronous tasks on this node: claims PENDING tasks up to its concurrency (at once when
 * one is submitted here, else every poll), runs each through the generation pipeline under a
 * lease it renews, ends FAILED (nothing billed) the tasks whose runner's lease lapsed, keeps the
 * quota reservations of unfinished tasks alive, and deletes expired tasks. Every node runs one;
 * the store's conditional updates keep any two from running or ending the same task.
 */
export class TaskRunner {
  /** Names this node in the tasks it claims. */
  readonly nodeId = `${hostname()}/${process.pid}/${randomUUID().slice(0, 8)}`;
  private readonly running = new Map<string, Running>();
  private readonly leases: Heartbeat<string>;
  private timer: NodeJS.Timeout | undefined;
  private stopping = false;
  private filling = false;
  private fillAgain = false;
  private ticking: Promise<void> = Promise.resolve();
  private lastReservationRenewal = 0;
  private lastSweep = 0;

  constructor(private readonly options: TaskRunnerOptions) {
    this.leases = new Heartbeat(
      Math.max(1, Math.floor(options.leaseMs / 3)),
      (ids) => this.renewLeases(ids),
      (error) =>
        options.log.warn(
          { err: String(error) },
          'renewing task leases failed until they ran out; another node may end those tasks',
        ),
    );
  }

  start(): void {
    this.timer = setInterval(() => void this.tick(), this.options.pollMs);
    this.timer.unref();
    void this.tick();
  }

  /** A task was submitted on this node: claim it now rather than at the next poll. */
  wake(): void {
    void this.fill();
  }

  /** Tasks running on this node now. */
  get active(): number {
    return this.running.size;
  }

  /**
   * Stops claiming; the tasks running here get up to `drainMs` to finish, then are stopped and end
   * FAILED with nothing billed (a node killed instead leaves them to the lease recovery).
   */
  async stop(drainMs: number): Promise<void> {
    this.stopping = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    await this.ticking;
    const all = () => Promise.all([...this.running.values()].map((run) => run.done));
    let deadline: NodeJS.Timeout | undefined;
    const drained = await Promise.race([
      all().then(() => true),
      new Promise<false>((resolve) => {
        deadline = setTimeout(() => resolve(false), drainMs);
      }),
    ]);
    clearTimeout(deadline);
    if (!drained) {
      this.options.log.warn(
        { tasks: this.running.size },
        'shutdown budget spent: stopping the tasks still running',
      );
      for (const run of this.running.values()) run.abort.abort(shutDownMidTask());
      await all();
    }
    await this.leases.stop();
  }

  /** One pass of the background work; passes never overlap. */
  tick(): Promise<void> {
    this.ticking = this.ticking.then(async () => {
      if (this.stopping) return;
      await this.guarded('renewing task reservations', () => this.renewReservations());
      await this.guarded('recovering lapsed tasks', () => this.recoverLapsed());
      await this.guarded('deleting expired tasks', () => this.sweep());
      await this.fill();
    });
    return this.ticking;
  }

  private async fill(): Promise<void> {
    if (this.filling) {
      this.fillAgain = true;
      return;
    }
    this.filling = true;
    try {
      do {
        this.fillAgain = false;
        while (!this.stopping && this.running.size < this.options.concurrency) {
          const now = this.options.now();
          const task = await this.options.store.claim(this.nodeId, now, now + this.options.leaseMs);
          if (task === undefined) break;
          this.launch(task);
        }
      } while (this.fillAgain && !this.stopping);
    } catch (error) {
      this.options.log.warn({ err: String(error) }, 'claiming tasks failed');
    } finally {
      this.filling = false;
    }
  }

  private launch(task: TaskRecord): void {
    const abort = new AbortController();
    this.leases.hold(task.id, task.id);
    const done = this.run(task, abort.signal).finally(() => {
      this.running.delete(task.id);
      this.leases.drop(task.id);
      void this.fill();
    });
    const leaseUntil = task.leaseUntil ?? this.options.now() + this.options.leaseMs;
    this.running.set(task.id, { abort, done, leaseUntil });
  }

  /**
   * Renews the leases of the tasks still running here. A renewal that fails (a database that is
   * restarting, a connection cut) is tried again, backing off, for as long as one of those leases
   * has time left: only then may another node find them lapsed.
   */
  private async renewLeases(ids: readonly string[]): Promise<void> {
    let pauseMs = FIRST_RENEWAL_RETRY_MS;
    for (;;) {
      const held = ids.flatMap((id) => {
        const run = this.running.get(id);
        return run === undefined ? [] : [{ id, run }];
      });
      if (held.length === 0) return;
      const leaseUntil = this.options.now() + this.options.leaseMs;
      try {
        const heldIds = held.map(({ id }) => id);
        await this.options.store.renewLeases(heldIds, this.nodeId, leaseUntil);
        for (const { run } of held) run.leaseUntil = leaseUntil;
        return;
      } catch (error) {
        const lapsesAt = Math.max(...held.map(({ run }) => run.leaseUntil));
        if (this.options.now() + pauseMs >= lapsesAt) throw error;
        this.options.log.warn(
          { err: String(error), retry_in_ms: pauseMs },
          'renewing task leases failed; trying again while they last',
        );
        await sleep(pauseMs);
        pauseMs = Math.min(pauseMs * 2, LAST_RENEWAL_RETRY_MS);
      }
    }
  }

  /**
   * The same pipeline as a synchronous request, resuming the reservation taken at submission,
   * once its token is found still good (it may have been revoked or expired while queued).
   * Success is recorded by the settlement itself (billing, ledger row and SUCCEEDED in one
   * transaction); any failure ends the task FAILED with its row, billing nothing.
   */
  private async run(task: TaskRecord, signal: AbortSignal): Promise<void> {
    const { admission, generation } = this.options;
    const principal = principalOfTask(task);
    let request: GenerationRequest | undefined;
    let failed: { error: unknown; outcome?: GenerationOutcome };
    try {
      request = validateRequest(JSON.parse(task.request));
      await this.checkStanding(task);
      const ended = await generation.generate(request, {
        requestId: task.requestId,
        principal,
        signal,
        labels: taskLabels(task),
        task: { id: task.id, runner: this.nodeId, resultTtlMs: TASK_RESULT_TTL_MS },
        ...(task.resolveUploads ? { resolveUploads: true } : {}),
        admission: { admit: (admitted) => this.resumeUnderClaim(task, admitted) },
      });
      if (ended.ok) return;
      failed = ended;
    } catch (error) {
      failed = { error };
    }
    if (failed.error instanceof TaskClaimLost) {
      // Whoever ended the task wrote its row and gave its reservation back.
      this.options.log.warn({ task_id: task.id }, failed.error.message);
      await admission.releaseReserved(principal, task.reservationId);
      return;
    }
    const failure = signal.aborted
      ? shutDownMidTask()
      : taskFailureOf(failed.error, task.id, this.options.log);
    const outcome =
      failed.outcome ??
      emptyOutcome(request === undefined ? describedTask(task) : describe(request));
    await this.guarded('ending a failed task', () =>
      this.endFailed(task, outcome, failure, { state: 'RUNNING', runner: this.nodeId }),
    );
    await admission.releaseReserved(principal, task.reservationId);
  }

  /**
   * The task's reservation, taken back only while this node still holds the task, and the claim
   * asked again once it is held, as the upstream call follows at once: a runner that stalled
   * (input images, a paused process) past its lease while another node ended the task spends
   * nothing more on it.
   */
  private async resumeUnderClaim(
    task: TaskRecord,
    admitted: AdmissionRequest,
  ): Promise<AdmissionTicket> {
    await this.keepClaim(task);
    const ticket = await this.options.admission.resume(admitted, task.reservationId);
    try {
      await this.keepClaim(task);
    } catch (error) {
      await ticket.release();
      throw error;
    }
    return ticket;
  }

  /** One statement: the claim still this node's (its lease pushed forward), or TaskClaimLost. */
  private async keepClaim(task: TaskRecord): Promise<void> {
    const now = this.options.now();
    if (!(await this.options.store.keepClaim(task.id, this.nodeId, now + this.options.leaseMs)))
      throw new TaskClaimLost(task.id);
  }

  private async checkStanding(task: TaskRecord): Promise<void> {
    // An external token without an id has no row to check; its signature was checked at submission.
    if (task.tokenId === undefined) return;
    try {
      await this.options.tokens.checkStanding(task.tokenId);
    } catch (error) {
      throw tokenStandingLost(error);
    }
  }

  private async endFailed(
    task: TaskRecord,
    outcome: GenerationOutcome,
    failure: GatewayError,
    expected: TaskExpectation,
  ): Promise<boolean> {
    const now = this.options.now();
    const unbilled = Object.assign({}, outcome, {
      imagesDelivered: 0,
      imagesBilled: 0,
      costMicros: 0,
    });
    return this.options.store.end(
      task.id,
      expected,
      {
        state: 'FAILED',
        errorCode: failure.code,
        errorMessage: failure.message,
        endedAt: now,
        expiresAt: now + TASK_RESULT_TTL_MS,
      },
      usageRowOf(taskLabels(task), unbilled, {
        status: failure.status,
        code: failure.code,
        endedAt: now,
      }),
    );
  }

  /**
   * Tasks whose runner stopped renewing its lease: it may have reached an upstream that is
   * generating still, so the task is not run again but ends FAILED, nothing billed. Tasks whose
   * node stopped before handing their id to the caller end CANCELED, nothing billed.
   */
  private async recoverLapsed(): Promise<void> {
    const now = this.options.now();
    const lapsed = await this.options.store.lapsed(now, RECOVERIES_PER_PASS);
    for (const task of lapsed) {
      // Its runner is alive here: it renews the lease again once it can, and ends the task itself.
      if (task.runner === this.nodeId && this.running.has(task.id)) continue;
      const outcome = emptyOutcome(describedTask(task));
      const ended =
        task.state === 'PENDING'
          ? await this.endUnannounced(task, outcome, now)
          : task.runner !== undefined &&
            (await this.endFailed(task, outcome, runnerLost(), {
              state: 'RUNNING',
              runner: task.runner,
              lapsedBy: now,
            }));
      if (!ended) continue;
      this.options.log.warn(
        { task_id: task.id, runner: task.runner, state: task.state },
        'task ended: its node stopped renewing it',
      );
      await this.options.admission.releaseReserved(principalOfTask(task), task.reservationId);
    }
  }

  /** A task whose id the gateway cannot say reached its caller: canceled, 499 CallerGone. */
  private async endUnannounced(
    task: TaskRecord,
    outcome: GenerationOutcome,
    now: number,
  ): Promise<boolean> {
    const ended = unannounced();
    return this.options.store.end(
      task.id,
      { state: 'PENDING', held: true, lapsedBy: now },
      {
        state: 'CANCELED',
        errorCode: ended.code,
        errorMessage: ended.message,
        endedAt: now,
        expiresAt: now + TASK_RESULT_TTL_MS,
      },
      usageRowOf(taskLabels(task), outcome, {
        status: LEDGER_CODES.CallerGone.status,
        code: 'CallerGone',
        endedAt: now,
      }),
    );
  }

  private async renewReservations(): Promise<void> {
    const now = this.options.now();
    if (now - this.lastReservationRenewal < this.options.reservationTtlMs / 3) return;
    this.lastReservationRenewal = now;
    await this.options.store.renewReservations(now + this.options.reservationTtlMs);
  }

  private async sweep(): Promise<void> {
    const now = this.options.now();
    if (now - this.lastSweep < SWEEP_EVERY_MS) return;
    this.lastSweep = now;
    await purgeInBatches((limit) => this.options.store.deleteExpired(now, limit));
  }

  private async guarded(what: string, work: () => Promise<unknown>): Promise<void> {
    try {
      await work();
    } catch (error) {
      this.options.log.warn({ err: String(error) }, `${what} failed`);
    }
  }
}

/** What a task asked for, from its stored request; its model alone when that no longer validates. */
function describedTask(task: TaskRecord): RequestDescription | undefined {
  try {
    return describe(validateRequest(JSON.parse(task.request)));
  } catch {
    return describeRefused(task.model);
  }
}
