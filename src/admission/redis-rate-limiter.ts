import type { Redis } from 'ioredis';
import type {
  GateDecision,
  GateRequest,
  RateDecision,
  RateLimiter,
  RateRule,
  SlotDecision,
  SlotHold,
} from './rate-limiter.js';
import { defineLimiterCommands, type LimiterCommands } from './redis-scripts.js';

function numbers(reply: unknown): number[] {
  if (!Array.isArray(reply) || !reply.every((item) => typeof item === 'number'))
    throw new Error(`unexpected reply from a Redis script: ${JSON.stringify(reply)}`);
  return reply;
}

/** A GCRA script's reply: allowed 0|1, remaining, reset ms, retry-after ms. */
function rateDecisionOf(
  [allowed, remaining, resetMs, retryAfterMs]: number[],
  rule: RateRule,
): RateDecision {
  return {
    allowed: allowed === 1,
    limit: rule.limit,
    remaining: remaining ?? 0,
    resetMs: resetMs ?? 0,
    retryAfterMs: retryAfterMs ?? 0,
  };
}

/** A slot script's reply: acquired 0|1, slots in use. */
function slotDecisionOf([acquired, inUse]: number[], limit: number): SlotDecision {
  return { acquired: acquired === 1, limit, inUse: inUse ?? 0 };
}

/**
 * Slot releases kept while Redis is away; past this many, the oldest are dropped (their leases
 * end first).
 */
const MAX_DEFERRED_RELEASES = 10_000;

/**
 * The rate limiter shared by every node through one Redis. Each decision is one atomic script,
 * so concurrent nodes can never admit more than the limit between them. While Redis is not
 * connected, calls fail at once instead of queueing; a slot release that failed is sent again
 * once it is back.
 */
export class RedisRateLimiter implements RateLimiter {
  private readonly redis: Redis & LimiterCommands;
  /** Slot releases that could not be sent, by holder: sent once Redis is ready again. */
  private readonly deferredReleases = new Map<string, SlotHold>();

  constructor(
    redis: Redis,
    private readonly keyPrefix: string,
    private readonly ownsConnection = true,
  ) {
    this.redis = defineLimiterCommands(redis);
    this.redis.on('ready', this.sendDeferredReleases);
  }

  async pass({ slot, rate }: GateRequest): Promise<GateDecision> {
    if (slot === undefined)
      return rate === undefined ? {} : { rate: await this.hit(rate.key, rate.rule) };
    if (rate === undefined)
      return { slot: await this.acquireSlot(slot.hold, slot.limit, slot.ttlMs) };
    this.ensureReady();
    const reply = numbers(
      await this.redis.gatePass(
        this.slotKey(slot.hold.key),
        this.rateKey(rate.key),
        slot.hold.holder,
        slot.limit,
        slot.ttlMs,
        rate.rule.limit,
        rate.rule.windowMs,
      ),
    );
    const slotDecision = slotDecisionOf(reply, slot.limit);
    return reply.length > 2
      ? { slot: slotDecision, rate: rateDecisionOf(reply.slice(2), rate.rule) }
      : { slot: slotDecision };
  }

  async hit(key: string, rule: RateRule): Promise<RateDecision> {
    this.ensureReady();
    return rateDecisionOf(
      numbers(await this.redis.gcraHit(this.rateKey(key), rule.limit, rule.windowMs)),
      rule,
    );
  }

  async acquireSlot(hold: SlotHold, limit: number, ttlMs: number) {
    this.ensureReady();
    return slotDecisionOf(
      numbers(await this.redis.slotAcquire(this.slotKey(hold.key), hold.holder, limit, ttlMs)),
      limit,
    );
  }

  async renewSlots(holds: readonly SlotHold[], ttlMs: number) {
    if (holds.length === 0) return;
    this.ensureReady();
    await Promise.all(
      holds.map((hold) => this.redis.slotRenew(this.slotKey(hold.key), hold.holder, ttlMs)),
    );
  }

  /**
   * Frees a slot. A release that cannot be sent now (Redis reconnecting, or a call that failed) is
   * sent again once Redis is ready: else the slot would stay held by nobody until its lease ran
   * out. Rejects all the same, so that the failure is reported.
   */
  async releaseSlot(hold: SlotHold) {
    try {
      this.ensureReady();
      await this.redis.zrem(this.slotKey(hold.key), hold.holder);
    } catch (error) {
      this.deferRelease(hold);
      throw error;
    }
  }

  async close() {
    this.redis.off('ready', this.sendDeferredReleases);
    if (!this.ownsConnection) return;
    try {
      await this.redis.quit();
    } catch {
      this.redis.disconnect();
    }
  }

  private deferRelease(hold: SlotHold): void {
    // A long outage under load: the oldest releases go first (their slots expire soonest).
    if (this.deferredReleases.size >= MAX_DEFERRED_RELEASES) {
      const oldest = this.deferredReleases.keys().next().value;
      if (oldest !== undefined) this.deferredReleases.delete(oldest);
    }
    this.deferredReleases.set(hold.holder, hold);
  }

  private readonly sendDeferredReleases = (): void => {
    const holds = [...this.deferredReleases.values()];
    this.deferredReleases.clear();
    for (const hold of holds)
      this.redis.zrem(this.slotKey(hold.key), hold.holder).catch(() => this.deferRelease(hold));
  };

  private ensureReady() {
    if (this.redis.status !== 'ready')
      throw new Error(`Redis is not connected (status ${this.redis.status})`);
  }

  private rateKey(key: string) {
    return `${this.keyPrefix}rate:${key}`;
  }

  private slotKey(key: string) {
    return `${this.keyPrefix}slots:${key}`;
  }
}
