import { rowLabelsFor } from '../helpers/row-labels.js';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it, type TestContext } from 'node:test';
import { Redis } from 'ioredis';
import { silentLog } from '../../src/support/log.js';
import { MemoryRateLimiter } from '../../src/admission/memory-rate-limiter.js';
import type { RateLimiter } from '../../src/admission/rate-limiter.js';
import { RedisRateLimiter } from '../../src/admission/redis-rate-limiter.js';
import { TokenAdmission } from '../../src/admission/token-admission.js';
import { NO_LIMITS } from '../../src/domain/token-limits.js';
import { validateRequest } from '../../src/validate/validate-request.js';
import { redisTarget } from '../helpers/redis.js';
import { modelABody } from '../helpers/requests.js';
import { acceptingQuota } from '../helpers/accepting-quota.js';

interface LimiterUnderTest {
  limiters: RateLimiter[];
  /** Lets `ms` pass for every key of the test, without waiting. */
  advance(ms: number): Promise<void>;
}

type Factory = (t: TestContext, instances: number) => Promise<LimiterUnderTest | undefined>;

const memory: Factory = async (_t, instances) => {
  let now = 5_000_000;
  // Instances of the in-process limiter share nothing; the contract's shared parts use one.
  const limiter = new MemoryRateLimiter(() => now);
  return {
    limiters: Array.from({ length: instances }, () => limiter),
    advance: async (ms) => {
      now += ms;
    },
  };
};

/**
 * The Redis scripts read the server's clock, which a test cannot move. Moving every time stored
 * under `prefix` (rate keys' arrival times, slot holders' expiries, key expiries) `ms` into the
 * past is the same to them as `ms` passing.
 */
async function moveStoredTimesBack(redis: Redis, prefix: string, ms: number): Promise<void> {
  for (const storedKey of await redis.keys(`${prefix}*`)) {
    const expiresInMs = await redis.pttl(storedKey);
    if (expiresInMs <= ms) {
      await redis.del(storedKey);
      continue;
    }
    const type = await redis.type(storedKey);
    if (type === 'string') {
      const tat = Number(await redis.get(storedKey));
      await redis.set(storedKey, String(tat - ms), 'PX', expiresInMs - ms);
    } else if (type === 'zset') {
      const flat = await redis.zrange(storedKey, 0, -1, 'WITHSCORES');
      for (let index = 0; index < flat.length; index += 2)
        await redis.zadd(storedKey, Number(flat[index + 1]) - ms, flat[index] as string);
      await redis.pexpire(storedKey, expiresInMs - ms);
    } else {
      throw new Error(`the limiter stored a ${type} at ${storedKey}`);
    }
  }
}

const redis: Factory = async (t, instances) => {
  const target = await redisTarget(t);
  if (target === undefined) return undefined;
  const limiters: RateLimiter[] = [];
  for (let i = 0; i < instances; i++) {
    // One connection per instance, as separate nodes have.
    const client = new Redis(target.url, { enableOfflineQueue: true });
    await client.ping();
    const limiter = new RedisRateLimiter(client, target.prefix);
    limiters.push(limiter);
    t.after(() => limiter.close());
  }
  return { limiters, advance: (ms) => moveStoredTimesBack(target.redis, target.prefix, ms) };
};

const key = () => `key-${randomUUID()}`;
/** Long enough that the real time the calls take cannot expire a slot early. */
const SLOT_TTL_MS = 60_000;

for (const [name, factory] of [
  ['in-process', memory],
  ['Redis', redis],
] as const) {
  describe(`${name} rate limiter`, () => {
    it('allows a burst of the limit, then refuses with the time to wait, then recovers one per interval', async (t) => {
      const subject = await factory(t, 1);
      if (subject === undefined) return;
      const [limiter] = subject.limiters as [RateLimiter];
      // A window long enough that the real time the calls take cannot move a decision.
      const rule = { limit: 5, windowMs: 60_000 };
      const rateKey = key();
      const burst = [];
      for (let i = 0; i < 5; i++) burst.push(await limiter.hit(rateKey, rule));
      assert.deepEqual(
        burst.map((decision) => [decision.allowed, decision.remaining]),
        [
          [true, 4],
          [true, 3],
          [true, 2],
          [true, 1],
          [true, 0],
        ],
      );
      const refused = await limiter.hit(rateKey, rule);
      assert.equal(refused.allowed, false);
      assert.equal(refused.remaining, 0);
      assert.ok(
        refused.retryAfterMs > 9_000 && refused.retryAfterMs <= 12_000,
        `${refused.retryAfterMs}`,
      );
      assert.ok(refused.resetMs > 57_000 && refused.resetMs <= 60_000, `${refused.resetMs}`);
      await subject.advance(13_800);
      assert.equal((await limiter.hit(rateKey, rule)).allowed, true);
      assert.equal((await limiter.hit(rateKey, rule)).allowed, false);
      assert.equal((await limiter.hit(key(), rule)).allowed, true, 'keys are independent');
    });

    it('admits exactly the limit among concurrent hits from several instances', async (t) => {
      const subject = await factory(t, 3);
      if (subject === undefined) return;
      const rateKey = key();
      const decisions = await Promise.all(
        Array.from({ length: 45 }, (_, index) =>
          (subject.limiters[index % 3] as RateLimiter).hit(rateKey, {
            limit: 10,
            windowMs: 60_000,
          }),
        ),
      );
      assert.equal(decisions.filter((decision) => decision.allowed).length, 10);
    });

    it('passes a request in one step: the slot first, then the rate; a refused slot leaves the rate untouched, a refused rate frees the slot', async (t) => {
      const subject = await factory(t, 1);
      if (subject === undefined) return;
      const [limiter] = subject.limiters as [RateLimiter];
      const slotKey = key();
      const rateKey = key();
      const rule = { limit: 3, windowMs: 60_000 };
      const request = (holder: string) => ({
        slot: { hold: { key: slotKey, holder }, limit: 2, ttlMs: SLOT_TTL_MS },
        rate: { key: rateKey, rule },
      });
      const first = await limiter.pass(request('a'));
      assert.deepEqual(first.slot, { acquired: true, limit: 2, inUse: 1 });
      assert.equal(first.rate?.allowed, true);
      assert.equal(first.rate?.remaining, 2);
      assert.equal((await limiter.pass(request('b'))).rate?.remaining, 1);
      // Both slots are in use: refused, and not counted against the rate.
      assert.deepEqual(await limiter.pass(request('c')), {
        slot: { acquired: false, limit: 2, inUse: 2 },
      });
      await limiter.releaseSlot({ key: slotKey, holder: 'a' });
      const third = await limiter.pass(request('d'));
      assert.equal(third.slot?.acquired, true);
      assert.deepEqual([third.rate?.allowed, third.rate?.remaining], [true, 0]);
      await limiter.releaseSlot({ key: slotKey, holder: 'd' });
      // The rate is spent: refused, and the slot taken for it is given back.
      const refused = await limiter.pass(request('e'));
      assert.equal(refused.slot?.acquired, true);
      assert.equal(refused.rate?.allowed, false);
      assert.ok((refused.rate?.retryAfterMs ?? 0) > 0);
      assert.deepEqual(
        await limiter.acquireSlot({ key: slotKey, holder: 'f' }, 2, SLOT_TTL_MS),
        { acquired: true, limit: 2, inUse: 2 },
        'only b and f hold slots: e gave its slot back',
      );
      // One of the two alone.
      assert.deepEqual(await limiter.pass({}), {});
      assert.deepEqual(Object.keys(await limiter.pass({ rate: { key: key(), rule } })), ['rate']);
      assert.deepEqual(
        await limiter.pass({
          slot: { hold: { key: key(), holder: 'g' }, limit: 1, ttlMs: SLOT_TTL_MS },
        }),
        { slot: { acquired: true, limit: 1, inUse: 1 } },
      );
    });

    it('passes at most the slot limit, and counts only those passed, among concurrent requests from several instances', async (t) => {
      const subject = await factory(t, 3);
      if (subject === undefined) return;
      const slotKey = key();
      const rateKey = key();
      const decisions = await Promise.all(
        Array.from({ length: 30 }, (_, index) =>
          (subject.limiters[index % 3] as RateLimiter).pass({
            slot: { hold: { key: slotKey, holder: randomUUID() }, limit: 4, ttlMs: SLOT_TTL_MS },
            rate: { key: rateKey, rule: { limit: 10, windowMs: 60_000 } },
          }),
        ),
      );
      assert.equal(decisions.filter((decision) => decision.slot?.acquired === true).length, 4);
      assert.equal(decisions.filter((decision) => decision.rate !== undefined).length, 4);
      const [limiter] = subject.limiters as [RateLimiter];
      assert.equal(
        (await limiter.hit(rateKey, { limit: 10, windowMs: 60_000 })).remaining,
        10 - 4 - 1,
        'the 26 refused slots never counted against the rate',
      );
    });

    it('holds at most the limit of slots across instances, frees them on release and on expiry, keeps renewed ones', async (t) => {
      const subject = await factory(t, 3);
      if (subject === undefined) return;
      const slotKey = key();
      const holds = Array.from({ length: 30 }, () => ({ key: slotKey, holder: randomUUID() }));
      const decisions = await Promise.all(
        holds.map((hold, index) =>
          (subject.limiters[index % 3] as RateLimiter).acquireSlot(hold, 3, SLOT_TTL_MS),
        ),
      );
      const held = holds.filter((_, index) => decisions[index]?.acquired === true);
      assert.equal(held.length, 3);
      const [limiter] = subject.limiters as [RateLimiter];
      const late = { key: slotKey, holder: randomUUID() };
      assert.deepEqual(await limiter.acquireSlot(late, 3, SLOT_TTL_MS), {
        acquired: false,
        limit: 3,
        inUse: 3,
      });

      await limiter.releaseSlot(held[0] as (typeof held)[number]);
      assert.equal((await limiter.acquireSlot(late, 3, SLOT_TTL_MS)).acquired, true);

      await subject.advance(35_000);
      await limiter.renewSlots([late], SLOT_TTL_MS);
      await subject.advance(35_000);
      // held[1] and held[2] expired (a dead node's slots); `late` was renewed and still counts.
      const after = await limiter.acquireSlot(
        { key: slotKey, holder: randomUUID() },
        3,
        SLOT_TTL_MS,
      );
      assert.deepEqual(after, { acquired: true, limit: 3, inUse: 2 });
    });
  });
}

describe('the Redis rate limiter after Redis forgets its scripts', () => {
  it('sends the scripts again and keeps deciding', async (t) => {
    const target = await redisTarget(t);
    if (target === undefined) return;
    const client = new Redis(target.url);
    await client.ping();
    const limiter = new RedisRateLimiter(client, target.prefix);
    t.after(() => limiter.close());
    const rule = { limit: 2, windowMs: 60_000 };
    assert.equal((await limiter.hit('flushed', rule)).allowed, true);
    // As after a Redis restart; other tests' clients resend their scripts the same way.
    await target.redis.script('FLUSH');
    assert.equal((await limiter.hit('flushed', rule)).allowed, true);
    assert.equal((await limiter.hit('flushed', rule)).allowed, false);
  });
});

describe('an unreachable rate limiter', () => {
  it('lets requests through (fails open) instead of failing them', async (t) => {
    const down = new Redis('redis://127.0.0.1:1', {
      lazyConnect: true,
      enableOfflineQueue: false,
      retryStrategy: () => null,
    });
    down.on('error', () => undefined);
    const limiter = new RedisRateLimiter(down, 'down:');
    t.after(() => limiter.close());
    await assert.rejects(limiter.hit('k', { limit: 1, windowMs: 1000 }), /not connected/);
    const warnings: string[] = [];
    const admission = new TokenAdmission({
      limits: {
        find: async () => ({ ...NO_LIMITS, requestsPerMinute: 1, maxConcurrent: 1 }),
      },
      limiter,
      quota: acceptingQuota(),
      prices: {},
      leaseTtlMs: 30_000,
      now: Date.now,
      log: { ...silentLog, warn: (_details, message) => warnings.push(message) },
    });
    t.after(() => admission.close());
    const principal = { tokenId: 'tok_x', account: 'a', admin: false, issuer: 'gateway' as const };
    const request = validateRequest(modelABody());
    for (let i = 0; i < 3; i++) {
      const pass = await admission.pass(principal);
      const labels = rowLabelsFor(`r${i}`, principal.tokenId);
      const ticket = await admission.admit({ principal, request, maxImages: 1, labels });
      await ticket.release();
      await pass.release();
    }
    assert.equal(warnings.length, 1, 'reported once, not per request');
    assert.match(warnings[0] as string, /not enforced/);
  });
});
