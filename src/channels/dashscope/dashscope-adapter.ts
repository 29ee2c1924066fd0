import { setTimeout as delay } from 'node:timers/promises';
import type { DashScopeChannelConfig } from '../../config/channel-config.js';
import {
  type AttemptCall,
  type AttemptResult,
  type AttemptRun,
  type ChannelAdapter,
  failure,
} from '../attempt-result.js';
import { answersAtOnce } from '../../engine/engine-run.js';
import { asAbortSignal, type Cancellation } from '../../support/cancellation.js';
import { excerpt, parseJson } from '../json-fields.js';
import { transportFailure } from '../transport-failure.js';
import type { HttpOutcome } from '../upstream-exchange.js';
import { retryAfterMs, type UpstreamHttp } from '../upstream-http.js';
import {
  ASYNC_PATH,
  cancelPath,
  classifyDashScopeError,
  dashScopeBodyBytes,
  errorOf,
  readDashScopeOutput,
  readTaskId,
  readTaskState,
  SYNC_PATH,
  taskPath,
} from './dashscope-protocol.js';

const MAX_ANSWER_BYTES = 4 * 1024 * 1024;
/** Polls in a row that may fail (network, 5xx, 429, unreadable) before the task is given up. */
const MAX_POLL_FAILURES = 5;
const CANCEL_TIMEOUT_MS = 5_000;
const POLL_GROWTH = 1.5;

type Response = Extract<HttpOutcome, { kind: 'response' }>;

/** DashScope's protocol: one sync call, or an async task submitted, polled and cancelled. */
export class DashScopeAdapter implements ChannelAdapter {
  constructor(
    private readonly config: DashScopeChannelConfig,
    private readonly http: UpstreamHttp,
  ) {}

  attempt(call: AttemptCall): AttemptRun {
    return answersAtOnce(() =>
      this.config.mode === 'async' ? this.runTask(call) : this.runSync(call),
    );
  }

  private async runSync(call: AttemptCall): Promise<AttemptResult> {
    const answer = await this.post(SYNC_PATH, call, {});
    if (answer.kind === 'failed') return transportFailure(answer, call);
    const body = this.readSuccessBody(answer);
    if (!body.ok) return body.result;
    const read = readDashScopeOutput(body.json, call.job);
    if (read.ok) return { ok: true, output: read.output };
    // A 200 without readable images: nothing the caller could use, and nothing to bill.
    return failure('error-body', `HTTP 200 but ${read.problem}`);
  }

  private async runTask(call: AttemptCall): Promise<AttemptResult> {
    const answer = await this.post(ASYNC_PATH, call, { 'x-dashscope-async': 'enable' });
    if (answer.kind === 'failed') return transportFailure(answer, call);
    const body = this.readSuccessBody(answer);
    if (!body.ok) return body.result;
    const taskId = readTaskId(body.json);
    if (taskId === undefined)
      return failure('malformed', 'HTTP 200 but the answer names no task', {
        mayHaveBeenAccepted: true,
      });
    const result = await this.awaitTask(taskId, call, call.signal);
    if (result.ok || (result.failure.kind !== 'caller-gone' && result.failure.kind !== 'timeout'))
      return result;
    const canceled = await this.cancel(taskId);
    if (canceled || result.failure.kind === 'timeout' || call.upstreamSignal.aborted) return result;
    // The caller left and the task runs on: it will be charged for, so it is followed to its end
    // (within the attempt's time) for what it reports it produced.
    return this.awaitTask(taskId, call, call.upstreamSignal);
  }

  /** Polls the task until it ends, or until `until` is aborted. */
  private async awaitTask(
    taskId: string,
    call: AttemptCall,
    until: Cancellation,
  ): Promise<AttemptResult> {
    let wait = this.config.poll.initialMs;
    let failedPolls = 0;
    // The timer between polls wants a real AbortSignal: one for the whole wait, not one per poll.
    const signal = asAbortSignal(until);
    for (;;) {
      try {
        await delay(wait, undefined, { signal });
      } catch {
        return aborted(call, taskId);
      }
      wait = Math.min(Math.round(wait * POLL_GROWTH), this.config.poll.maxMs);
      const answer = await this.http.send({
        method: 'GET',
        url: `${this.config.baseUrl}${taskPath(taskId)}`,
        headers: this.headers({}),
        signal: until,
        maxResponseBytes: MAX_ANSWER_BYTES,
      });
      if (answer.kind === 'failed' && answer.aborted) return aborted(call, taskId);
      const state =
        answer.kind === 'response' && answer.status === 200
          ? readTaskState(parseJson(answer.body))
          : undefined;
      if (state === undefined) {
        failedPolls += 1;
        const problem =
          answer.kind === 'failed'
            ? answer.detail
            : `HTTP ${answer.status} ${excerpt(answer.body.toString('utf8'), 120)}`;
        if (failedPolls >= MAX_POLL_FAILURES) {
          await this.cancel(taskId);
          return failure('dropped', `lost track of task ${taskId} (${problem})`, {
            mayHaveBeenAccepted: true,
          });
        }
        continue;
      }
      failedPolls = 0;
      switch (state.state) {
        case 'running':
          continue;
        case 'succeeded': {
          const read = readDashScopeOutput(state.body, call.job);
          if (read.ok) return { ok: true, output: read.output };
          return failure('malformed', `task ${taskId} SUCCEEDED but ${read.problem}`, {
            mayHaveBeenAccepted: true,
          });
        }
        case 'failed': {
          // A failed task produced nothing and is not billed: another channel may try.
          const classified = classifyDashScopeError(200, state.error, this.config.apiKey);
          if (classified.ok || classified.failure.kind !== 'error-body') return classified;
          return failure('task-failed', `task ${taskId} FAILED (${classified.failure.detail})`);
        }
        case 'canceled':
          return failure('task-failed', `task ${taskId} was CANCELED upstream`);
        case 'unknown':
          return failure('task-unknown', `task ${taskId} is UNKNOWN upstream`, {
            mayHaveBeenAccepted: true,
          });
      }
    }
  }

  /**
   * Best effort: DashScope cancels tasks that are still PENDING; a running one finishes anyway.
   * True when the upstream said the task was cancelled.
   */
  private async cancel(taskId: string): Promise<boolean> {
    const answer = await this.http.send({
      method: 'POST',
      url: `${this.config.baseUrl}${cancelPath(taskId)}`,
      headers: this.headers({}),
      signal: AbortSignal.timeout(CANCEL_TIMEOUT_MS),
      maxResponseBytes: MAX_ANSWER_BYTES,
    });
    return answer.kind === 'response' && answer.status === 200;
  }

  private post(
    path: string,
    call: AttemptCall,
    extraHeaders: Record<string, string>,
  ): Promise<HttpOutcome> {
    return this.http.send({
      method: 'POST',
      url: `${this.config.baseUrl}${path}`,
      headers: this.headers({ 'content-type': 'application/json', ...extraHeaders }),
      body: dashScopeBodyBytes(call.job, call.upstreamModel),
      // Once sent, the upstream works and charges whether the caller stays or not: its answer
      // is read, for what it produced, or for the task to cancel.
      signal: call.upstreamSignal,
      maxResponseBytes: MAX_ANSWER_BYTES,
    });
  }

  /** The JSON of a 200 without an error code, or what the answer means as a failure. */
  private readSuccessBody(
    answer: Response,
  ): { ok: true; json: unknown } | { ok: false; result: AttemptResult } {
    const json = parseJson(answer.body);
    const error = errorOf(json);
    if (answer.status === 200 && json !== undefined && error === undefined)
      return { ok: true, json };
    if (answer.status === 200 && json === undefined)
      // The upstream answered success in a form we cannot read: it may have produced images.
      return {
        ok: false,
        result: failure(
          'malformed',
          `HTTP 200 with an unreadable body: ${excerpt(answer.body.toString('utf8'), 120)}`,
          {
            mayHaveBeenAccepted: true,
          },
        ),
      };
    const described =
      error ??
      (answer.status >= 400
        ? { code: '', message: excerpt(answer.body.toString('utf8'), 200) }
        : undefined);
    return {
      ok: false,
      result: classifyDashScopeError(
        answer.status,
        described,
        this.config.apiKey,
        retryAfterMs(answer.headers),
      ),
    };
  }

  private headers(extra: Record<string, string>): Record<string, string> {
    return {
      authorization: `Bearer ${this.config.apiKey.reveal()}`,
      accept: 'application/json',
      'user-agent': 'imagegate',
      ...extra,
    };
  }
}

function aborted(call: AttemptCall, taskId: string): AttemptResult {
  if (call.callerGone())
    return failure('caller-gone', `caller disconnected while task ${taskId} ran`, {
      mayHaveBeenAccepted: true,
    });
  return failure('timeout', `timed out while task ${taskId} ran`, { mayHaveBeenAccepted: true });
}
