import type { Redis } from 'ioredis';
import type { RateDecision, RateLimiter, RateRule, SlotHold } from './rate-limiter.js';
import { defineLimiterCommands, type LimiterCommands } from './redis-scripts.js';

function numbers(reply: unknown): number[] {
  if (!Array.isArray(reply) || !reply.every((item) => typeof item === 'number'))
    throw new Error(`unexpected reply from a Redis script: ${JSON.stringify(reply)}`);
  return reply;
}

/**
 * The rate limiter shared by every node through one Redis. Each decision is one atomic script,
 * so concurrent nodes can never admit more than the limit between them. While Redis is not
 * connected, calls fail at once instead of queueing.
 */
export class RedisRateLimiter implements RateLimiter {
  private readonly redis: Redis & LimiterCommands;

  constructor(
    redis: Redis,
    private readonly keyPrefix: string,
    private readonly ownsConnection = true,
  ) {
    this.redis = defineLimiterCommands(redis);
  }

  async hit(key: string, rule: RateRule): Promise<RateDecision> {
    this.ensureReady();
    const [allowed, remaining, resetMs, retryAfterMs] = numbers(
      await this.redis.gcraHit(this.rateKey(key), rule.limit, rule.windowMs),
    );
    return {
      allowed: allowed === 1,
      limit: rule.limit,
      remaining: remaining ?? 0,
      resetMs: resetMs ?? 0,
      retryAfterMs: retryAfterMs ?? 0,
    };
  }

  async acquireSlot(hold: SlotHold, limit: number, ttlMs: number) {
    this.ensureReady();
    const [acquired, inUse] = numbers(
      await this.redis.slotAcquire(this.slotKey(hold.key), hold.holder, limit, ttlMs),
    );
    return { acquired: acquired === 1, limit, inUse: inUse ?? 0 };
  }

  async renewSlots(holds: readonly SlotHold[], ttlMs: number) {
    if (holds.length === 0) return;
    this.ensureReady();
    await Promise.all(
      holds.map((hold) => this.redis.slotRenew(this.slotKey(hold.key), hold.holder, ttlMs)),
    );
  }

  async releaseSlot(hold: SlotHold) {
    this.ensureReady();
    await this.redis.zrem(this.slotKey(hold.key), hold.holder);
  }

  async close() {
    if (!this.ownsConnection) return;
    try {
      await this.redis.quit();
    } catch {
      this.redis.disconnect();
    }
  }

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
