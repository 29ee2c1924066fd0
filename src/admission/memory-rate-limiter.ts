import {
  type GateDecision,
  type GateRequest,
  gcraStep,
  type RateLimiter,
  type RateRule,
  type SlotHold,
} from './rate-limiter.js';

/** Past this many keys, keys whose state has run out are dropped on the next hit. */
const PRUNE_THRESHOLD = 10_000;

/** The rate limiter of a single node: exact and fast, but shared with no other node. */
export class MemoryRateLimiter implements RateLimiter {
  private readonly arrivals = new Map<string, number>();
  private readonly slots = new Map<string, Map<string, number>>();

  constructor(private readonly now: () => number = Date.now) {}

  async pass({ slot, rate }: GateRequest): Promise<GateDecision> {
    const slotDecision =
      slot === undefined ? undefined : await this.acquireSlot(slot.hold, slot.limit, slot.ttlMs);
    if (slotDecision?.acquired === false) return { slot: slotDecision };
    if (rate === undefined) return slotDecision === undefined ? {} : { slot: slotDecision };
    const rateDecision = await this.hit(rate.key, rate.rule);
    if (!rateDecision.allowed && slot !== undefined) await this.releaseSlot(slot.hold);
    return slotDecision === undefined
      ? { rate: rateDecision }
      : { slot: slotDecision, rate: rateDecision };
  }

  async hit(key: string, rule: RateRule) {
    const now = this.now();
    if (this.arrivals.size > PRUNE_THRESHOLD) this.prune(now);
    const { decision, tat } = gcraStep(this.arrivals.get(key), now, rule);
    this.arrivals.set(key, tat);
    return decision;
  }

  async acquireSlot(hold: SlotHold, limit: number, ttlMs: number) {
    const now = this.now();
    const holders = this.slots.get(hold.key) ?? new Map<string, number>();
    for (const [holder, expiresAt] of holders) if (expiresAt <= now) holders.delete(holder);
    if (holders.size >= limit && !holders.has(hold.holder)) {
      this.store(hold.key, holders);
      return { acquired: false, limit, inUse: holders.size };
    }
    holders.set(hold.holder, now + ttlMs);
    this.store(hold.key, holders);
    return { acquired: true, limit, inUse: holders.size };
  }

  async renewSlots(holds: readonly SlotHold[], ttlMs: number) {
    const expiresAt = this.now() + ttlMs;
    for (const hold of holds) {
      const holders = this.slots.get(hold.key);
      if (holders?.has(hold.holder) === true) holders.set(hold.holder, expiresAt);
    }
  }

  async releaseSlot(hold: SlotHold) {
    const holders = this.slots.get(hold.key);
    holders?.delete(hold.holder);
    if (holders?.size === 0) this.slots.delete(hold.key);
  }

  async close() {
    this.arrivals.clear();
    this.slots.clear();
  }

  private store(key: string, holders: Map<string, number>) {
    if (holders.size === 0) this.slots.delete(key);
    else this.slots.set(key, holders);
  }

  private prune(now: number) {
    for (const [key, tat] of this.arrivals) if (tat <= now) this.arrivals.delete(key);
  }
}
