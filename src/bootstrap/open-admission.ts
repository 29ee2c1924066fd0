import type { Config } from '../config/config.js';
import { IdempotencyKeys } from '../idempotency/idempotency-keys.js';
import { BatchingLedger } from '../ledger/batching-ledger.js';
import type { Database } from '../store/database/database.js';
import { SqlIdempotencyStore } from '../store/idempotency-store.js';
import { SqlQuotaStore } from '../store/billing/quota-store.js';
import { SqlTokenLimitsStore, type TokenLimitsRecord } from '../store/token-limits-store.js';
import { SqlUsageStore } from '../store/usage-store.js';
import type { Log } from '../support/log.js';
import { MemoryRateLimiter } from '../admission/memory-rate-limiter.js';
import { TtlCache } from '../support/ttl-cache.js';
import { openRedis } from './open-redis.js';
import type { RateLimiter } from '../admission/rate-limiter.js';
import { RedisRateLimiter } from '../admission/redis-rate-limiter.js';
import { TokenAdmission } from '../admission/token-admission.js';
import { UploadBounds } from '../admission/upload-bounds.js';
import { SqlUploadUsageStore } from '../store/upload-usage-store.js';
import { purgeInBatches } from '../support/batched-purge.js';
import { sweepEvery, sweepOfParts } from './admission-sweep.js';

/** Rows waiting for the ledger beyond which the oldest are logged and dropped. */
const MAX_BUFFERED_LEDGER_ROWS = 100_000;

/** Everything admission and billing run on, opened from the configuration and closed together. */
export interface AdmissionServices {
  admission: TokenAdmission;
  /** Upload certificates' admission and the upload bounds per certificate and per token. */
  uploads: UploadBounds;
  limiter: RateLimiter;
  quota: SqlQuotaStore;
  limits: SqlTokenLimitsStore;
  /** The limits admission remembers for IMAGEGATE_TOKEN_CACHE_MS. */
  cachedLimits: TtlCache<TokenLimitsRecord | undefined>;
  ledger: BatchingLedger;
  usage: SqlUsageStore;
  idempotency: IdempotencyKeys;
  /** Reclaims expired reservations and forgets expired idempotency keys, as the timer does. */
  sweep(): Promise<void>;
  /** Stops the timers, writes the ledger's remaining rows, disconnects from Redis. */
  close(): Promise<void>;
}

export interface AdmissionOptions {
  config: Pick<Config, 'admission' | 'tokenCacheMs' | 'uploads'>;
  database: Database;
  now: () => number;
  log: Log;
  /** Replaces the limiter the configuration names (tests). */
  limiter?: RateLimiter;
}

export async function openAdmission(options: AdmissionOptions): Promise<AdmissionServices> {
  const { config, database, now, log } = options;
  const settings = config.admission;
  const limiter =
    options.limiter ??
    (settings.redisUrl === undefined
      ? new MemoryRateLimiter(now)
      : new RedisRateLimiter(await openRedis(settings.redisUrl, log), settings.redisKeyPrefix));
  const quota = new SqlQuotaStore(database);
  const limits = new SqlTokenLimitsStore(database.db);
  const usage = new SqlUsageStore(database);
  const cachedLimits = new TtlCache(limits, config.tokenCacheMs, now);
  const admission = new TokenAdmission({
    limits: cachedLimits,
    limiter,
    quota,
    prices: settings.imagePrices,
    leaseTtlMs: settings.reservationTtlMs,
    now,
    log,
  });
  const uploadUsage = new SqlUploadUsageStore(database.db);
  const uploads = new UploadBounds({
    admission,
    limits: cachedLimits,
    usage: uploadUsage,
    settings: config.uploads,
    now,
  });
  const ledger = new BatchingLedger(
    usage,
    {
      batchSize: settings.ledgerBatchSize,
      flushIntervalMs: settings.ledgerFlushMs,
      maxBuffered: MAX_BUFFERED_LEDGER_ROWS,
    },
    log,
  );
  const idempotency = new IdempotencyKeys(
    new SqlIdempotencyStore(database),
    settings.reservationTtlMs,
    now,
    log,
  );

  const sweep = sweepOfParts([
    ['reclaiming expired reservations', () => quota.reclaimExpired(now())],
    ['purging expired Idempotency-Keys', () => idempotency.purgeExpired()],
    [
      'purging the upload counts of past windows and certificates',
      () => purgeInBatches((limit) => uploadUsage.deleteExpired(now(), limit)),
    ],
  ]);
  // Every node sweeps; the deletes are atomic, so two nodes never free the same reservation twice.
  const stopSweeping = sweepEvery(settings.reservationTtlMs, sweep, log);

  return {
    admission,
    uploads,
    limiter,
    quota,
    limits,
    cachedLimits,
    ledger,
    usage,
    idempotency,
    sweep,
    close: async () => {
      await stopSweeping();
      await Promise.all([admission.close(), idempotency.close()]);
      await ledger.close();
      await limiter.close();
    },
  };
}
