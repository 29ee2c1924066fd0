import type { EngineJob, ImageAt, ProducedImage } from '../engine/engine.js';
import type { GatewayError } from '../errors/gateway-error.js';
import type { Cancellation } from '../support/cancellation.js';

/** What an upstream produced, before its remote images are re-hosted. */
export interface UpstreamOutput {
  images: ProducedImage[];
  width: number;
  height: number;
  /** Images the upstream reports it produced and charges for (its `usage.image_count`), if it says. */
  imagesReported?: number;
  tokens?: { input: number; output: number };
}

/**
 * Why an attempt failed, as the router needs to know it:
 * - `unreachable`: no connection; nothing was sent.
 * - `timeout`: the attempt's time ran out.
 * - `dropped`: the connection broke after the request was written.
 * - `throttled`: 429 or a throttling code.
 * - `server-error`: 5xx.
 * - `error-body`: a success status whose body carries an error code, or no images.
 * - `malformed`: an answer that cannot be read.
 * - `task-failed`: an async task ended FAILED or CANCELED.
 * - `task-unknown`: an async task ended UNKNOWN.
 * - `key-rejected`: 401/403: the channel's key is not accepted.
 * - `rejected`: the upstream refused the request itself (validation, moderation): the caller's 400.
 * - `caller-gone`: the caller disconnected.
 * - `overloaded`: the gateway's own queue for the channel was full, or the request's time ran out
 *   while it waited there: nothing was started, and the channel's health is not in question.
 */
export type FailureKind =
  | 'unreachable'
  | 'timeout'
  | 'dropped'
  | 'throttled'
  | 'server-error'
  | 'error-body'
  | 'malformed'
  | 'task-failed'
  | 'task-unknown'
  | 'key-rejected'
  | 'rejected'
  | 'caller-gone'
  | 'overloaded';

/** How a failure counts in the final answer: 503 ModelUnavailable or 502 UpstreamError. */
export type FailureCategory = 'unavailable' | 'upstream-error';

export interface AttemptFailure {
  kind: FailureKind;
  category: FailureCategory;
  /**
   * True when the upstream may have accepted the request (and may produce and bill images): it
   * must not be sent again, to this channel or any other.
   */
  mayHaveBeenAccepted: boolean;
  /** For people: what happened, without keys. */
  detail: string;
  /** The upstream's Retry-After, when it gave one. */
  retryAfterMs?: number;
  /** `rejected` only: the error the caller gets. */
  callerError?: GatewayError;
}

export type AttemptResult =
  { ok: true; output: UpstreamOutput } | { ok: false; failure: AttemptFailure };

/** One attempt at one channel. */
export interface AttemptCall {
  job: EngineJob;
  /** The upstream's name for the requested model. */
  upstreamModel: string;
  /** Aborted when the caller goes away or the attempt's time runs out. */
  signal: Cancellation;
  /**
   * Aborted when the attempt's time runs out or the job is stopped (a task's runner stopping),
   * not when the caller goes away: for an exchange the upstream works on, and charges for,
   * whether anyone listens or not. Its answer is read to the end, so that what the upstream
   * reports it produced is recorded.
   */
  upstreamSignal: Cancellation;
  /** Whether the caller has gone (as opposed to the attempt's time running out). */
  callerGone(): boolean;
  /**
   * Runs `wait`, a wait for a turn in the gateway's own queue for the channel, off the attempt's
   * clock: meanwhile only the caller leaving or the routing deadline abort `signal`, and the
   * attempt's time-out counts from when `wait` settles.
   */
  waitOffTheClock<T>(wait: () => Promise<T>): Promise<T>;
}

/**
 * An attempt under way, as an `EngineRun` is: it yields each image as soon as it is produced (an
 * adapter that answers at once yields none, `answersAtOnce`) and returns its result, those images
 * included.
 */
export type AttemptRun = AsyncGenerator<ImageAt<ProducedImage>, AttemptResult, undefined>;

/** One upstream protocol: runs an attempt and reports its result; never throws for upstream trouble. */
export interface ChannelAdapter {
  attempt(call: AttemptCall): AttemptRun;
}

export function failure(
  kind: FailureKind,
  detail: string,
  options: {
    mayHaveBeenAccepted?: boolean;
    category?: FailureCategory;
    retryAfterMs?: number;
    callerError?: GatewayError;
  } = {},
): AttemptResult {
  return {
    ok: false,
    failure: {
      kind,
      category: options.category ?? defaultCategory(kind),
      mayHaveBeenAccepted: options.mayHaveBeenAccepted ?? false,
      detail,
      ...(options.retryAfterMs === undefined ? {} : { retryAfterMs: options.retryAfterMs }),
      ...(options.callerError === undefined ? {} : { callerError: options.callerError }),
    },
  };
}

function defaultCategory(kind: FailureKind): FailureCategory {
  switch (kind) {
    case 'unreachable':
    case 'timeout':
    case 'throttled':
    case 'key-rejected':
    case 'caller-gone':
    case 'overloaded':
      return 'unavailable';
    default:
      return 'upstream-error';
  }
}
