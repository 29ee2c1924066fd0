// The sweep of expired Idempotency-Keys on SQLite, where its deletes run on the event loop: how
// long the purge takes, and the longest the event loop was held meanwhile.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { GenerationResult } from '../src/generation/generation-service.js';
import { IdempotencyKeys } from '../src/idempotency/idempotency-keys.js';
import { openDatabase } from '../src/store/database/database.js';
import { SqlIdempotencyStore } from '../src/store/idempotency-store.js';
import { PURGE_BATCH_ROWS } from '../src/support/batched-purge.js';
import { silentLog } from '../src/support/log.js';
import type { BenchRow } from './bench-row.js';

/** A minute of keys at 1,000 requests a second: what one sweep finds expired, a day later. */
const EXPIRED_KEYS = 60_000;
const NOW = Date.now();
/** A stored result as a settlement publishes it: the generation's result, one signed image URL. */
const RESULT = JSON.stringify({
  imageUrls: [
    `http://127.0.0.1:8080/images/${'a'.repeat(24)}.png?expires=1795882380&signature=${'s'.repeat(43)}`,
  ],
  width: 2048,
  height: 2048,
  tokens: { input: 12, output: 4096 },
  createdAt: NOW,
} satisfies GenerationResult);

async function purgeOnce(batchSize: number): Promise<{ totalMs: number; stallMs: number }> {
  const directory = await mkdtemp(path.join(tmpdir(), 'imagegate-purge-bench-'));
  const database = await openDatabase({ kind: 'sqlite', file: path.join(directory, 'gateway.db') });
  try {
    for (let start = 0; start < EXPIRED_KEYS; start += 500) {
      const rows = Array.from({ length: 500 }, (_, offset) => {
        const index = start + offset;
        return {
          scope: `tok_${index % 50}`,
          idempotency_key: `${index.toString(36)}-${Math.random().toString(36).slice(2)}`,
          fingerprint: 'f'.repeat(64),
          state: 'done' as const,
          owner: `req-${index}/owner`,
          lease_until: 0,
          request_id: `req-${index}`,
          result: RESULT,
          created_at: NOW - 86_460_000 + index,
          expires_at: NOW - 60_000 + index,
        };
      });
      await database.db.insertInto('idempotency_keys').values(rows).execute();
    }
    const keys = new IdempotencyKeys(
      new SqlIdempotencyStore(database),
      60_000,
      () => NOW,
      silentLog,
    );
    const delay = monitorEventLoopDelay({ resolution: 1 });
    delay.enable();
    // The histogram keeps no first sample: it must be ticking before the purge begins.
    await sleep(20);
    const start = process.hrtime.bigint();
    const purged = await keys.purgeExpired(batchSize);
    const totalMs = Number(process.hrtime.bigint() - start) / 1e6;
    // The sampling timer, held back by a purge that never yields, records the stall when it fires.
    await sleep(20);
    delay.disable();
    await keys.close();
    if (purged !== EXPIRED_KEYS) throw new Error(`purged ${purged} of ${EXPIRED_KEYS} keys`);
    return { totalMs, stallMs: delay.max / 1e6 };
  } finally {
    await database.close();
    await rm(directory, { recursive: true, force: true });
  }
}

export default async function expiredPurgeBench(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const setups: [string, number][] = [
    [`by batches of ${PURGE_BATCH_ROWS}`, PURGE_BATCH_ROWS],
    ['in one statement (before batching)', EXPIRED_KEYS],
  ];
  for (const [how, batchSize] of setups) {
    const { totalMs, stallMs } = await purgeOnce(batchSize);
    const name = `purge of ${EXPIRED_KEYS.toLocaleString('en')} expired Idempotency-Keys, SQLite, ${how}`;
    rows.push({ name: `${name}: time`, value: totalMs, unit: 'ms' });
    rows.push({ name: `${name}: longest event-loop stall`, value: stallMs, unit: 'ms' });
  }
  return rows;
}
