import { randomUUID } from 'node:crypto';
import { taskLabels } from './task-labels.js';
import type { TaskReservations } from '../admission/admission.js';
import { type GenerationRequest, maxImagesOf } from '../domain/generation-request.js';
import type { Principal } from '../domain/principal.js';
import type { TaskFilter, TaskRecord, TaskState } from '../domain/task.js';
import { GatewayError } from '../errors/gateway-error.js';
import { describe, emptyOutcome } from '../ledger/generation-outcome.js';
import type { RowLabels } from '../ledger/row-labels.js';
import { usageRowOf } from '../ledger/usage-row-of.js';
import { LEDGER_CODES } from '../errors/error-table.js';
import { type QueuePlace, SubmissionClaimLost, type TaskStore } from '../store/task-store.js';
import { IMAGE_URL_VALIDITY_SECONDS } from '../storage/signed-url.js';
import { PerKeySlots } from '../support/per-key-slots.js';
import { holdsControlCharacter } from '../support/stored-text.js';
import { validateRequest } from '../validate/validate-request.js';
import { mayRead, ownerOf, principalOfTask } from './task-owner.js';
import { echo } from '../errors/echo.js';
import { CallerGone } from '../errors/caller-gone.js';
import type { Log } from '../support/log.js';

/** Tasks and their images expire together: 24 hours after the task ends. */
export const TASK_RESULT_TTL_MS = IMAGE_URL_VALIDITY_SECONDS * 1000;
/** How long a submission refused for a full queue (or its token's full part of it) is told to wait. */
const QUEUE_FULL_RETRY_AFTER_S = 5;
/**
 * Task listings one caller may have under way at once on this node. A listing reads a page and a
 * count, which on SQLite wait their turn on one thread shared by every caller: without a cap, one
 * caller's flood of listings would queue everyone else's behind it.
 */
export const LISTINGS_PER_CALLER = 2;
/** Ledger-only code of a task canceled before it ran. */
export const CANCELED_CODE = 'Canceled';

export interface Submission {
  /** The validated body, stored with the task and validated again when it runs. */
  body: unknown;
  request: GenerationRequest;
  requestId: string;
  principal: Principal;
  /** The submission's row labels: its row becomes the task's row, written when the task ends. */
  labels: RowLabels;
  /** The Idempotency-Key claim it runs under: the task's id is published under it. */
  claim?: { scope: string; key: string; owner: string } | undefined;
  /** `X-DashScope-OssResourceResolve: enable` was sent: the task's `oss://` inputs name uploads. */
  resolveUploads: boolean;
  /** True once the caller's connection has closed: no task is stored for a caller who left. */
  callerGone: () => boolean;
}

/**
 * A stored task, held until the answer carrying its id has been handed to the caller's
 * connection: exactly one of the two ends the hold. Neither throws.
 */
export interface HeldSubmission {
  taskId: string;
  /** The answer was handed over: the task may run (on any node). */
  handedOver(): Promise<void>;
  /** The caller left, or the answer failed, before that: the task ends CANCELED, unbilled. */
  withdrawn(): Promise<void>;
}

export interface TaskListQuery {
  filter: Omit<TaskFilter, 'owner'>;
  pageNo: number;
  pageSize: number;
}

export interface TaskPage {
  tasks: TaskRecord[];
  total: number;
}

export interface TaskServiceOptions {
  store: TaskStore;
  admission: TaskReservations;
  /** PENDING tasks the deployment holds at most. */
  queueLimit: number;
  /** PENDING tasks one caller holds at most, unless its token has its own limit. */
  queueLimitPerToken: number;
  /** Called once a submission's id was handed over: the local runner claims it without a poll. */
  submitted: () => void;
  /**
   * How long a stored task waits for the answer carrying its id to be handed over; past it, a
   * node that died or stalled before that leaves it to be canceled by any node's recovery.
   */
  handoverMs: number;
  now: () => number;
  log: Log;
}

/**
 * Submission, status, cancellation and listing of asynchronous tasks. A submission is admitted
 * exactly as a synchronous request (limits, allowed models, quota reservation); its one ledger
 * row is written when the task ends, by whoever ends it.
 */
export class TaskService {
  private readonly listings = new PerKeySlots(LISTINGS_PER_CALLER);

  constructor(private readonly options: TaskServiceOptions) {}

  async submit(submission: Submission): Promise<HeldSubmission> {
    const { request, principal, labels, claim } = submission;
    const maxImages = maxImagesOf(request);
    const { store, admission, queueLimit } = this.options;
    const ownerBound =
      (await admission.pendingTasksAllowed(principal)) ?? this.options.queueLimitPerToken;
    const reservationId = await admission.reserveFor({ principal, request, maxImages, labels });
    const taskId = randomUUID();
    const submittedAt = labels.receivedAt;
    let place: QueuePlace;
    try {
      if (submission.callerGone()) throw new CallerGone();
      place = await store.insert(
        {
          id: taskId,
          requestId: submission.requestId,
          ledgerRowId: labels.rowId,
          owner: ownerOf(principal),
          tokenId: principal.tokenId,
          account: principal.account,
          issuer: principal.issuer,
          model: request.model,
          request: JSON.stringify(submission.body),
          workspace: labels.workspace,
          resolveUploads: submission.resolveUploads,
          reservationId,
          submittedAt,
          expiresAt: submittedAt + TASK_RESULT_TTL_MS,
        },
        claim === undefined
          ? undefined
          : {
              ...claim,
              requestId: submission.requestId,
              result: JSON.stringify({ task_id: taskId }),
            },
        { total: queueLimit, perOwner: ownerBound },
        this.options.now() + this.options.handoverMs,
      );
    } catch (error) {
      await admission.releaseReserved(principal, reservationId);
      if (error instanceof SubmissionClaimLost)
        throw new GatewayError(
          'Overloaded',
          'this submission was held up in the gateway past its Idempotency-Key claim; nothing was stored, retry it',
          { 'Retry-After': '1' },
        );
      throw error;
    }
    if (place !== 'stored') {
      await admission.releaseReserved(principal, reservationId);
      throw queueRefusal(place, place === 'queue-full' ? queueLimit : ownerBound);
    }
    // The task's row, with this request's id, is written when the task ends.
    return {
      taskId,
      handedOver: () => this.handedOver(taskId),
      withdrawn: () => this.withdrawn(taskId, submission, reservationId),
    };
  }

  private async handedOver(taskId: string): Promise<void> {
    try {
      if (await this.options.store.handOver(taskId)) this.options.submitted();
    } catch (error) {
      // The hold runs out and the task is canceled: nothing is billed for it.
      this.options.log.warn(
        { task_id: taskId, err: String(error) },
        'releasing a task for its runners failed',
      );
    }
  }

  private async withdrawn(
    taskId: string,
    submission: Submission,
    reservationId: string | undefined,
  ): Promise<void> {
    const { labels, principal, request, claim } = submission;
    const now = this.options.now();
    const row = usageRowOf(labels, emptyOutcome(describe(request)), {
      status: LEDGER_CODES.CallerGone.status,
      code: 'CallerGone',
      endedAt: now,
    });
    try {
      const ended = await this.options.store.end(
        taskId,
        { state: 'PENDING', held: true },
        {
          state: 'CANCELED',
          errorCode: 'CallerGone',
          errorMessage:
            'the caller left before the answer carrying this task id reached it; nothing was billed',
          endedAt: now,
          expiresAt: now + TASK_RESULT_TTL_MS,
        },
        row,
        claim,
      );
      if (ended) await this.options.admission.releaseReserved(principal, reservationId);
    } catch (error) {
      // The hold runs out and the recovery cancels the task: nothing is billed for it.
      this.options.log.warn(
        { task_id: taskId, err: String(error) },
        'canceling a task whose caller left failed',
      );
    }
  }

  /** The caller's task (any task for an admin token), or 404. */
  async find(principal: Principal, taskId: string): Promise<TaskRecord> {
    // No task id holds one, and PostgreSQL refuses U+0000 in the lookup itself.
    if (holdsControlCharacter(taskId)) throw noSuchTask(taskId);
    const task = await this.options.store.find(taskId);
    if (task === undefined || !mayRead(principal, task)) throw noSuchTask(taskId);
    return task;
  }

  /** PENDING to CANCELED: the reservation is freed and the row records that nothing was billed. */
  async cancel(principal: Principal, taskId: string): Promise<TaskRecord> {
    const task = await this.find(principal, taskId);
    if (task.state !== 'PENDING') throw notCancelable(task.id, task.state);
    const now = this.options.now();
    const request = validateRequest(JSON.parse(task.request));
    const end = {
      state: 'CANCELED' as const,
      errorCode: CANCELED_CODE,
      errorMessage: 'the task was canceled before it ran',
      endedAt: now,
      expiresAt: now + TASK_RESULT_TTL_MS,
    };
    const row = usageRowOf(taskLabels(task), emptyOutcome(describe(request)), {
      status: LEDGER_CODES.CallerGone.status,
      code: CANCELED_CODE,
      endedAt: now,
    });
    if (!(await this.options.store.end(task.id, { state: 'PENDING' }, end, row))) {
      const current = await this.options.store.find(task.id);
      throw notCancelable(task.id, current?.state ?? 'RUNNING');
    }
    // The owner's reservation: an admin may cancel another token's task.
    await this.options.admission.releaseReserved(principalOfTask(task), task.reservationId);
    return { ...task, state: 'CANCELED', endedAt: now };
  }

  /**
   * The caller's tasks, newest first (every task for an admin token). A caller with
   * `LISTINGS_PER_CALLER` listings under way is refused another with 429 and Retry-After.
   * `signal`: the caller left; reads still waiting their turn are dropped.
   */
  async list(principal: Principal, query: TaskListQuery, signal?: AbortSignal): Promise<TaskPage> {
    const caller = ownerOf(principal);
    const release = this.listings.tryTake(caller);
    if (release === undefined)
      throw new GatewayError(
        'Throttling.RateQuota',
        `this token has ${LISTINGS_PER_CALLER} task listings under way, the most at once; retry once one has answered`,
        { 'Retry-After': '1' },
      );
    const filter: TaskFilter = { ...query.filter, owner: principal.admin ? undefined : caller };
    // Both reads are waited for, even when one fails: the slot stands for both of them.
    const [tasks, total] = await Promise.allSettled([
      this.options.store.list(filter, (query.pageNo - 1) * query.pageSize, query.pageSize, signal),
      this.options.store.count(filter, signal),
    ]);
    release();
    if (tasks.status === 'rejected') throw tasks.reason;
    if (total.status === 'rejected') throw total.reason;
    return { tasks: tasks.value, total: total.value };
  }
}

function queueRefusal(place: Exclude<QueuePlace, 'stored'>, bound: number): GatewayError {
  const retryAfter = { 'Retry-After': String(QUEUE_FULL_RETRY_AFTER_S) };
  return place === 'queue-full'
    ? new GatewayError(
        'Overloaded',
        `the task queue is full (${bound} tasks waiting); retry later`,
        retryAfter,
      )
    : new GatewayError(
        'Throttling.RateQuota',
        `this token has ${bound} tasks waiting, the most it may; retry once one of them has started`,
        retryAfter,
      );
}

function noSuchTask(taskId: string): GatewayError {
  return new GatewayError('NotFound', `no task ${echo(taskId)} for this token`);
}

function notCancelable(taskId: string, state: TaskState): GatewayError {
  return new GatewayError(
    'UnsupportedOperation',
    `task ${taskId} is ${state}; only a PENDING task can be canceled`,
  );
}
