/** At most `limit` requests per `windowMs`, spread evenly, with bursts of up to `limit`. */
export interface RateRule {
  limit: number;
  windowMs: number;
}

export interface RateDecision {
  allowed: boolean;
  limit: number;
  /** Requests that could still be made right now. */
  remaining: number;
  /** Milliseconds until the whole limit is available again. */
  resetMs: number;
  /** Milliseconds until a denied request may be retried; 0 when allowed. */
  retryAfterMs: number;
}

export interface SlotDecision {
  acquired: boolean;
  limit: number;
  /** Slots held after this decision, this one included when acquired. */
  inUse: number;
}

/** One concurrency slot: the key it counts against and the request holding it. */
export interface SlotHold {
  key: string;
  holder: string;
}

/** What one request asks of the limiter as it is admitted: a slot, a count against a rate, or both. */
export interface GateRequest {
  slot?: { hold: SlotHold; limit: number; ttlMs: number };
  rate?: { key: string; rule: RateRule };
}

/**
 * The answers to a `GateRequest`: `slot` when one was asked for; `rate` when one was asked for and
 * the slot (if any) was acquired. A rate refused has freed the slot taken for it.
 */
export interface GateDecision {
  slot?: SlotDecision;
  rate?: RateDecision;
}

/**
 * Request rates and concurrency slots, per key. Rates follow the generic cell rate algorithm
 * (GCRA), which needs one number per key and has no window edges to burst across. A slot is held
 * until released or until `ttlMs` passes without renewal, so a holder that dies frees it.
 */
export interface RateLimiter {
  /**
   * A request's admission in one step: its slot first, then its count against the rate; a slot
   * refused leaves the rate untouched. The shared limiter decides both in one round trip.
   */
  pass(request: GateRequest): Promise<GateDecision>;
  hit(key: string, rule: RateRule): Promise<RateDecision>;
  acquireSlot(hold: SlotHold, limit: number, ttlMs: number): Promise<SlotDecision>;
  renewSlots(holds: readonly SlotHold[], ttlMs: number): Promise<void>;
  releaseSlot(hold: SlotHold): Promise<void>;
  close(): Promise<void>;
}

/**
 * One GCRA step: the theoretical arrival time `tat` of a key moves `windowMs / limit` per
 * request; a request is allowed while `tat` stays within one window of now. Shared by the
 * in-process limiter and mirrored by the Redis script.
 */
export function gcraStep(
  storedTat: number | undefined,
  now: number,
  rule: RateRule,
): { decision: RateDecision; tat: number } {
  const interval = rule.windowMs / rule.limit;
  const tat = Math.max(storedTat ?? now, now);
  const nextTat = tat + interval;
  const allowAt = nextTat - rule.windowMs;
  if (now < allowAt) {
    return {
      tat,
      decision: {
        allowed: false,
        limit: rule.limit,
        remaining: 0,
        resetMs: Math.ceil(tat - now),
        retryAfterMs: Math.ceil(allowAt - now),
      },
    };
  }
  return {
    tat: nextTat,
    decision: {
      allowed: true,
      limit: rule.limit,
      remaining: Math.floor((now - allowAt) / interval),
      resetMs: Math.ceil(nextTat - now),
      retryAfterMs: 0,
    },
  };
}
