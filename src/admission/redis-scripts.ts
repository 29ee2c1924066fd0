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
const GCRA_STEP = `
local function gcra_hit(key, limit, window, now)
  local interval = window / limit
  local tat = now
  local stored = redis.call('GET', key)
  if stored then tat = math.max(tonumber(stored), now) end
  local next_tat = tat + interval
  local allow_at = next_tat - window
  if now < allow_at then
    return {0, 0, math.ceil(tat - now), math.ceil(allow_at - now)}
  end
  redis.call('SET', key, tostring(next_tat), 'PX', math.ceil(next_tat - now) + 1)
  return {1, math.floor((now - allow_at) / interval), math.ceil(next_tat - now), 0}
end
`;
const GCRA_HIT = `${NOW_MS}${GCRA_STEP}
return gcra_hit(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), now)
`;

/**
 * Concurrency slots as a sorted set of holders scored by expiry. KEYS[1]: the set; ARGV: holder,
 * limit, ttl ms. Drops expired holders first. Returns {acquired 0|1, slots in use}.
 */
const SLOT_STEP = `
local function slot_acquire(key, holder, limit, ttl, now)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  local in_use = redis.call('ZCARD', key)
  if redis.call('ZSCORE', key, holder) then
    redis.call('ZADD', key, now + ttl, holder)
    redis.call('PEXPIRE', key, ttl)
    return {1, in_use}
  end
  if in_use >= limit then return {0, in_use} end
  redis.call('ZADD', key, now + ttl, holder)
  redis.call('PEXPIRE', key, ttl)
  return {1, in_use + 1}
end
`;
const SLOT_ACQUIRE = `${NOW_MS}${SLOT_STEP}
return slot_acquire(KEYS[1], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), now)
`;

/**
 * A request's admission: its slot, then its count against the rate, as SLOT_ACQUIRE and then
 * GCRA_HIT would decide them; a rate refused gives the slot back. KEYS: the slot set and the rate
 * key; ARGV: holder, slot limit, ttl ms, rate limit, window ms. Returns the slot's reply followed by
 * the rate's, or the slot's alone when it was refused.
 */
const GATE_PASS = `${NOW_MS}${SLOT_STEP}${GCRA_STEP}
local slot = slot_acquire(KEYS[1], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), now)
if slot[1] == 0 then return slot end
local rate = gcra_hit(KEYS[2], tonumber(ARGV[4]), tonumber(ARGV[5]), now)
if rate[1] == 0 then redis.call('ZREM', KEYS[1], ARGV[1]) end
return {slot[1], slot[2], rate[1], rate[2], rate[3], rate[4]}
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
  gatePass(
    slotKey: string,
    rateKey: string,
    holder: string,
    slotLimit: number,
    ttlMs: number,
    rateLimit: number,
    windowMs: number,
  ): Promise<unknown>;
}

/**
 * Defines the scripts as commands of `redis`. ioredis runs each by its SHA-1 and sends the
 * source once per connection, again after NOSCRIPT (a restarted or flushed Redis).
 */
export function defineLimiterCommands(redis: Redis): Redis & LimiterCommands {
  const scripts: Record<keyof LimiterCommands, { keys: number; lua: string }> = {
    gcraHit: { keys: 1, lua: GCRA_HIT },
    slotAcquire: { keys: 1, lua: SLOT_ACQUIRE },
    slotRenew: { keys: 1, lua: SLOT_RENEW },
    gatePass: { keys: 2, lua: GATE_PASS },
  };
  for (const [name, { keys, lua }] of Object.entries(scripts))
    redis.defineCommand(name, { numberOfKeys: keys, lua });
  return redis as Redis & LimiterCommands;
}
