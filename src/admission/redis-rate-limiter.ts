import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { RateDecision, RateLimiter, RateRule, SlotHold } from './rate-limiter.js';
import { GCRA_HIT, SLOT_ACQUIRE, SLOT_RENEW } from './redis-scripts.js';

/** A Lua script sent once and then run by its SHA-1, as Redis caches scripts. */
class LuaScript {
  private readonly sha: string;

  constructor(private readonly source: string) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  async run(redis: Redis, keys: string[], args: (string | number)[]): Promise<unknown> {
    try {
      return await redis.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return redis.eval(this.source, keys.length, ...keys, ...args);
    }
  }
}

const gcraHit = new LuaScript(GCRA_HIT);
const slotAcquire = new LuaScript(SLOT_ACQUIRE);
const slotRenew = new LuaScript(SLOT_RENEW);

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
  constructor(
    private readonly redis: Redis,
    private readonly keyPrefix: string,
    private readonly ownsConnection = true,
  ) {}

  async hit(key: string, rule: RateRule): Promise<RateDecision> {
    this.ensureReady();
    const [allowed, remaining, resetMs, retryAfterMs] = numbers(
      await gcraHit.run(this.redis, [this.rateKey(key)], [rule.limit, rule.windowMs]),
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
      await slotAcquire.run(this.redis, [this.slotKey(hold.key)], [hold.holder, limit, ttlMs]),
    );
    return { acquired: acquired === 1, limit, inUse: inUse ?? 0 };
  }

  async renewSlots(holds: readonly SlotHold[], ttlMs: number) {
    if (holds.length === 0) return;
    this.ensureReady();
    await Promise.all(
      holds.map((hold) =>
        slotRenew.run(this.redis, [this.slotKey(hold.key)], [hold.holder, ttlMs]),
      ),
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
