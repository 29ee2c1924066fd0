import type { RateDecision, SlotDecision } from './rate-limiter.js';

const seconds = (ms: number) => Math.max(0, Math.ceil(ms / 1000));

/**
 * The RateLimit-* fields of the IETF httpapi rate-limit draft, plus Retry-After when denied.
 * Values are whole seconds, rounded up so that a caller who waits them is never early.
 */
export function rateHeaders(decision: RateDecision): Record<string, string> {
  const headers: Record<string, string> = {
    'RateLimit-Limit': String(decision.limit),
    'RateLimit-Remaining': String(decision.remaining),
    'RateLimit-Reset': String(seconds(decision.resetMs)),
  };
  if (!decision.allowed)
    headers['Retry-After'] = String(Math.max(1, seconds(decision.retryAfterMs)));
  return headers;
}

/** A full concurrency limit: a slot may free up at any moment, so retry after a second. */
export function slotHeaders(decision: SlotDecision): Record<string, string> {
  return {
    'RateLimit-Limit': String(decision.limit),
    'RateLimit-Remaining': '0',
    'RateLimit-Reset': '1',
    'Retry-After': '1',
  };
}
