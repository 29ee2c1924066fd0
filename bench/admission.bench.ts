import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { silentLog } from '../src/support/log.js';
import { MemoryRateLimiter } from '../src/admission/memory-rate-limiter.js';
import { type AdmissionServices, openAdmission } from '../src/bootstrap/open-admission.js';
import type { RateLimiter } from '../src/admission/rate-limiter.js';
import { RedisRateLimiter } from '../src/admission/redis-rate-limiter.js';
import type { Principal } from '../src/domain/principal.js';
import { loadConfig } from '../src/config/load-config.js';
import { rowLabelsFor } from '../test/helpers/row-labels.js';
import { describe, emptyOutcome } from '../src/ledger/generation-outcome.js';
import { usageRowOf } from '../src/ledger/usage-row-of.js';
import {
  type Database,
  type DatabaseTarget,
  openDatabase,
} from '../src/store/database/database.js';
import { SqlTokenStore } from '../src/store/token-store.js';
import { SqlUsageStore } from '../src/store/usage-store.js';
import { validateRequest } from '../src/validate/validate-request.js';
import { type BenchRow, medianMs } from './bench-row.js';

const POSTGRES_URL =
  process.env.IMAGEGATE_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const REDIS_URL = process.env.IMAGEGATE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const REQUEST = validateRequest({
  model: 'gen-2.7-image-pro',
  input: { messages: [{ role: 'user', content: [{ text: 'a red fox' }] }] },
  parameters: { n: 2 },
});

interface Backend {
  name: string;
  database: Database;
  limiter: () => RateLimiter;
  close(): Promise<void>;
}

async function sqliteBackend(): Promise<Backend> {
  const directory = await mkdtemp(path.join(tmpdir(), 'imagegate-bench-'));
  const database = await openDatabase({ kind: 'sqlite', file: path.join(directory, 'bench.db') });
  return {
    name: 'SQLite + in-process limiter',
    database,
    limiter: () => new MemoryRateLimiter(),
    close: async () => {
      await database.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}

async function postgresBackend(): Promise<Backend | undefined> {
  const schema = `bench_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
  const redis = new Redis(REDIS_URL, { lazyConnect: true, retryStrategy: () => null });
  redis.on('error', () => undefined);
  let database: Database;
  try {
    await redis.connect();
    database = await openDatabase({
      kind: 'postgres',
      url: POSTGRES_URL,
      schema,
    } as DatabaseTarget);
  } catch (error) {
    process.stderr.write(
      `admission bench: PostgreSQL or Redis unavailable, skipped (${String(error)})\n`,
    );
    redis.disconnect();
    return undefined;
  }
  const prefix = `bench:${schema}:`;
  return {
    name: 'PostgreSQL + Redis',
    database,
    limiter: () => new RedisRateLimiter(redis, prefix, false),
    close: async () => {
      await database.close();
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length > 0) await redis.del(...keys);
      await redis.quit();
      const client = new pg.Client({ connectionString: POSTGRES_URL });
      await client.connect();
      await client.query(`drop schema if exists "${schema}" cascade`);
      await client.end();
    },
  };
}

async function tokenWithLimits(admission: AdmissionServices, database: Database, limited: boolean) {
  const id = `tok_${randomUUID()}`;
  await new SqlTokenStore(database.db).insert({
    id,
    name: 'bench',
    account: 'bench',
    createdAt: Date.now(),
    expiresAt: undefined,
    revokedAt: undefined,
    admin: false,
  });
  if (limited)
    await admission.limits.update(id, {
      imageQuota: 1_000_000_000,
      requestsPerMinute: 1_000_000_000,
      maxConcurrent: 1000,
    });
  const principal: Principal = { tokenId: id, account: 'bench', admin: false, issuer: 'gateway' };
  return principal;
}

/**
 * One request's admission work: the gate (rate and concurrency, before the body), admit (model
 * and quota), then settle (which writes its ledger row) and free the gate's slot.
 */
async function admitAndSettle(admission: AdmissionServices, principal: Principal) {
  const pass = await admission.admission.pass(principal);
  const ticket = await admission.admission.admit({
    principal,
    request: REQUEST,
    maxImages: 2,
    labels: rowLabelsFor(randomUUID(), principal.tokenId),
  });
  await ticket.settle({
    imagesDelivered: 2,
    imagesReceived: 2,
    width: 2048,
    height: 2048,
    result: {},
    caller: new AbortController().signal,
  });
  await pass.release();
}

/** How many callers admit and settle at once in the throughput rows. */
const CROWD_SIZES = [32, 256] as const;

/**
 * `callers` admitting and settling back to back on one token, each request the whole admission
 * work of a request through the gateway; 10 requests per caller, at least 1000.
 */
async function crowd(admission: AdmissionServices, principal: Principal, callers: number) {
  const total = Math.max(1000, callers * 10);
  const cpuBefore = process.cpuUsage();
  const started = process.hrtime.bigint();
  let next = 0;
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (next++ < total) await admitAndSettle(admission, principal);
    }),
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const cpu = process.cpuUsage(cpuBefore);
  return { callers, total, perSecond: total / seconds, cpuMicros: (cpu.user + cpu.system) / total };
}

async function benchBackend(backend: Backend): Promise<BenchRow[]> {
  const admission = await openAdmission({
    config: loadConfig({ IMAGEGATE_TOKEN_CACHE_MS: '5000' }),
    database: backend.database,
    now: Date.now,
    log: silentLog,
    limiter: backend.limiter(),
  });
  try {
    const unlimited = await tokenWithLimits(admission, backend.database, false);
    const limited = await tokenWithLimits(admission, backend.database, true);
    const iterations = 300;
    const plain = await medianMs(() => admitAndSettle(admission, unlimited), iterations, 20);
    const full = await medianMs(() => admitAndSettle(admission, limited), iterations, 20);

    const crowds = [];
    for (const callers of CROWD_SIZES) crowds.push(await crowd(admission, limited, callers));

    const store = new SqlUsageStore(backend.database);
    const rows = Array.from({ length: 10_000 }, () =>
      usageRowOf(
        { ...rowLabelsFor(randomUUID(), limited.tokenId), account: 'bench' },
        emptyOutcome(describe(REQUEST)),
        { status: 429, code: 'Throttling.RateQuota', endedAt: Date.now() },
      ),
    );
    const writeStarted = process.hrtime.bigint();
    for (let start = 0; start < rows.length; start += 500)
      await store.insert(rows.slice(start, start + 500));
    const writeSeconds = Number(process.hrtime.bigint() - writeStarted) / 1e9;

    return [
      {
        name: `${backend.name}: admit + settle, token without limits`,
        value: plain,
        unit: 'ms',
        note: `median of ${iterations}; settle writes the ledger row`,
      },
      {
        name: `${backend.name}: admit + settle, quota + rpm + concurrency`,
        value: full,
        unit: 'ms',
        note: `median of ${iterations}`,
      },
      ...crowds.map((result): BenchRow => ({
        name: `${backend.name}: admitted requests, ${result.callers} concurrent`,
        value: result.perSecond,
        unit: 'req/s',
        note: `${result.total} admit + settle, all limits on one token; ${result.cpuMicros.toFixed(0)} µs of this process's CPU each`,
      })),
      {
        name: `${backend.name}: ledger batch writes`,
        value: rows.length / writeSeconds,
        unit: 'ops/s',
        note: 'rows/s, batches of 500',
      },
    ];
  } finally {
    await admission.close();
  }
}

export default async function bench(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const open of [sqliteBackend, postgresBackend]) {
    const backend = await open();
    if (backend === undefined) continue;
    try {
      rows.push(...(await benchBackend(backend)));
    } finally {
      await backend.close();
    }
  }
  return rows;
}
