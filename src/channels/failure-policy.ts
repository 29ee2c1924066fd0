import type { AttemptFailure, FailureCategory, FailureKind } from './attempt-result.js';

/** What the router does once an attempt at a channel has failed. */
export interface FailurePolicy {
  /** How the channel's circuit breaker counts the attempt. */
  breaker: 'succeeded' | 'released' | 'failed';
  /** What the channel's health records: a failure, or the channel taken out of service. */
  health?: 'failed' | 'taken-out';
  log?: { level: 'info' | 'warn' | 'error'; message: string };
  /**
   * What comes next: try the next channel (`next`); try it unless the upstream may have accepted
   * the request (`next-unless-accepted`); answer the caller the upstream's refusal of the request
   * (`answer-refusal`); stop, the caller having left (`stop`).
   */
  then: 'next' | 'next-unless-accepted' | 'answer-refusal' | 'stop';
  /** The category the attempt's note gets instead of the failure's own (its Retry-After dropped). */
  noteCategory?: FailureCategory;
  /** The gateway's own queue turned it away: the final answer says the gateway is overloaded. */
  gatewayOverloaded?: boolean;
}

/** A channel that failed: counted against it, and another tried unless this one may have the work. */
const CHANNEL_FAILED: FailurePolicy = {
  breaker: 'failed',
  health: 'failed',
  log: { level: 'warn', message: 'channel attempt failed' },
  then: 'next-unless-accepted',
};

const POLICIES: Record<FailureKind, FailurePolicy> = {
  unreachable: CHANNEL_FAILED,
  timeout: CHANNEL_FAILED,
  dropped: CHANNEL_FAILED,
  throttled: CHANNEL_FAILED,
  'server-error': CHANNEL_FAILED,
  'error-body': CHANNEL_FAILED,
  malformed: CHANNEL_FAILED,
  'task-failed': CHANNEL_FAILED,
  'task-unknown': CHANNEL_FAILED,
  // The upstream works; it refused this request, which no other channel would take either.
  rejected: { breaker: 'succeeded', then: 'answer-refusal' },
  'caller-gone': { breaker: 'released', then: 'stop' },
  // Our own queue turned the request away: the channel itself was not asked.
  overloaded: {
    breaker: 'released',
    log: { level: 'info', message: 'channel busy: request not queued' },
    then: 'next',
    gatewayOverloaded: true,
  },
  'key-rejected': {
    breaker: 'released',
    health: 'taken-out',
    log: { level: 'error', message: 'channel taken out: upstream rejected its key' },
    then: 'next',
    noteCategory: 'unavailable',
  },
};

/**
 * The policy for `failure`. A refusal without an error for the caller, and a "caller gone" whose
 * caller is in fact still there, are judged as any failure of the channel.
 */
export function policyFor(failure: AttemptFailure, callerGone: boolean): FailurePolicy {
  if (failure.kind === 'rejected' && failure.callerError === undefined) return CHANNEL_FAILED;
  if (failure.kind === 'caller-gone' && !callerGone) return CHANNEL_FAILED;
  return POLICIES[failure.kind];
}
