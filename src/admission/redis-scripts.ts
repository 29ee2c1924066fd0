import type { Redis } from 'ioredis';

/**
 * Lua run atomically inside Redis. Times come from the Redis server's own clock (TIME), so nodes
 * whose clocks disagree still share one timeline. Redis 5+ replicates script effects, which
 * makes TIME safe to use.
 */
const NOW_MS = `
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
`;

/**
 * GCRA, as gcraStep in rate-limiter.ts. KEYS[1]: the key; ARGV: limit, window ms.
 * Returns {allowed 0|1, remaining, reset ms, retry-after ms}.
 */
const GCRA_HIT = `${NOW_MS}
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local interval = window / limit
local tat = now
local stored = redis.call('GET', KEYS[1])
if stored then tat = math.max(tonumber(stored), now) end
local next_tat = tat + interval
local allow_at = next_tat - window
if now < allow_at then
  return {0, 0, math.ceil(tat - now), math.ceil(allow_at - now)}
end
redis.call('SET', KEYS[1], tostring(next_tat), 'PX', math.ceil(next_tat - now) + 1)
return {1, math.floor((now - allow_at) / interval), math.ceil(next_tat - now), 0}
`;

/**
 * Concurrency slots as a sorted set of holders scored by expiry. KEYS[1]: the set; ARGV: holder,
 * limit, ttl ms. Drops expired holders first. Returns {acquired 0|1, slots in use}.
 */
const SLOT_ACQUIRE = `${NOW_MS}
local ttl = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local in_use = redis.call('ZCARD', KEYS[1])
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
  redis.call('PEXPIRE', KEYS[1], ttl)
  return {1, in_use}
end
if in_use >= tonumber(ARGV[2]) then return {0, in_use} end
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
redis.call('PEXPIRE', KEYS[1], ttl)
return {1, in_use + 1}
`;

/** Extends a holder's slot, if it still holds one. KEYS[1]: the set; ARGV: holder, ttl ms. */
const SLOT_RENEW = `${NOW_MS}
local ttl = tonumber(ARGV[2])
if redis.call('ZADD', KEYS[1], 'XX', 'CH', now + ttl, ARGV[1]) == 1 then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return 0
`;

/** The scripts as commands on a Redis client; each resolves to the script's reply. */
export interface LimiterCommands {
  gcraHit(key: string, limit: number, windowMs: number): Promise<unknown>;
  slotAcquire(key: string, holder: string, limit: number, ttlMs: number): Promise<unknown>;
  slotRenew(key: string, holder: string, ttlMs: number): Promise<unknown>;
}

/**
 * Defines the scripts as commands of `redis`. ioredis runs each by its SHA-1 and sends the
 * source once per connection, again after NOSCRIPT (a restarted or flushed Redis).
 */
export function defineLimiterCommands(redis: Redis): Redis & LimiterCommands {
  const scripts: Record<keyof LimiterCommands, string> = {
    gcraHit: GCRA_HIT,
    slotAcquire: SLOT_ACQUIRE,
    slotRenew: SLOT_RENEW,
  };
  for (const [name, lua] of Object.entries(scripts))
    redis.defineCommand(name, { numberOfKeys: 1, lua });
  return redis as Redis & LimiterCommands;
}
