import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import pg from 'pg';

const POSTGRES_URL =
  process.env.IMAGEGATE_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const REDIS_URL = process.env.IMAGEGATE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * `token create` options of a quota token whose limits never refuse, so that every request is
 * admitted (a slot and a count in Redis, a reservation in PostgreSQL) and settled.
 */
export const QUOTA_TOKEN_LIMITS: readonly string[] = [
  '--image-quota',
  '1000000000',
  '--rpm',
  '1000000000',
  '--concurrency',
  '1000',
];

/** The settings that put a gateway on a PostgreSQL schema and Redis key prefix of its own. */
export interface SharedBackend {
  env: Record<string, string>;
  /** Drops the schema and deletes the keys. */
  close(): Promise<void>;
}

/** Undefined (with the reason on stderr) when PostgreSQL or Redis cannot be reached. */
export async function openSharedBackend(): Promise<SharedBackend | undefined> {
  const schema = `bench_proxy_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
  const prefix = `bench-proxy:${schema}:`;
  const redis = new Redis(REDIS_URL, { lazyConnect: true, retryStrategy: () => null });
  redis.on('error', () => undefined);
  const client = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 2000 });
  try {
    await redis.connect();
    await client.connect();
    await client.query(`create schema "${schema}"`);
  } catch (error) {
    process.stderr.write(`proxy bench: PostgreSQL or Redis unavailable (${String(error)})\n`);
    redis.disconnect();
    await client.end().catch(() => undefined);
    return undefined;
  }
  const url = new URL(POSTGRES_URL);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return {
    env: {
      IMAGEGATE_DATABASE_URL: url.toString(),
      IMAGEGATE_REDIS_URL: REDIS_URL,
      IMAGEGATE_REDIS_KEY_PREFIX: prefix,
    },
    close: async () => {
      try {
        await client.query(`drop schema if exists "${schema}" cascade`);
        const keys = await redis.keys(`${prefix}*`);
        if (keys.length > 0) await redis.del(...keys);
      } finally {
        await client.end();
        await redis.quit();
      }
    },
  };
}
