import { randomBytes } from 'node:crypto';
import type { TestContext } from 'node:test';
import { Redis } from 'ioredis';
import { SERVICES_REQUIRED } from './postgres.js';

export const TEST_REDIS_URL = process.env.IMAGEGATE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

export interface RedisTarget {
  url: string;
  /** A key prefix of this test's own; every key under it is deleted when the test ends. */
  prefix: string;
  /** A connected client, closed when the test ends. */
  redis: Redis;
}

async function connect(): Promise<{ redis: Redis } | { problem: string }> {
  const redis = new Redis(TEST_REDIS_URL, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: 2000,
    retryStrategy: () => null,
  });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    await redis.ping();
    return { redis };
  } catch (error) {
    redis.disconnect();
    return { problem: (error as Error).message };
  }
}

/**
 * Redis for one test, under a key prefix of its own. When Redis is not reachable the test is
 * skipped with a message saying so, or fails if services are required (IMAGEGATE_REQUIRE_SERVICES=1).
 */
export async function redisTarget(t: TestContext): Promise<RedisTarget | undefined> {
  const connected = await connect();
  if ('problem' in connected) {
    if (SERVICES_REQUIRED)
      throw new Error(
        `Redis is required (IMAGEGATE_REQUIRE_SERVICES=1) but ${TEST_REDIS_URL} is not reachable: ${connected.problem}`,
      );
    t.skip(`SKIPPED: Redis not reachable at ${TEST_REDIS_URL} (${connected.problem})`);
    return undefined;
  }
  const { redis } = connected;
  const prefix = `imagegate-test:${randomBytes(6).toString('hex')}:`;
  t.after(async () => {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });
  return { url: TEST_REDIS_URL, prefix, redis };
}
