import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { deriveKeys } from '../../src/auth/keys.js';
import { TokenIssuer } from '../../src/auth/token-issuer.js';
import { MODEL_A, MODEL_B } from '../../src/domain/models.js';
import type { TokenLimitChanges } from '../../src/domain/token-limits.js';
import { openDatabase } from '../../src/store/database/database.js';
import { SqlTokenLimitsStore } from '../../src/store/token-limits-store.js';
import { SqlTokenStore } from '../../src/store/token-store.js';
import { postgresTarget } from '../helpers/postgres.js';
import { redisTarget } from '../helpers/redis.js';
import { type GatewayProcess, startGatewayProcess } from './gateway-process.js';

/** How long a dead node's reservations and slots outlive it in a cluster. */
export const RESERVATION_TTL_MS = 3000;

/**
 * A cluster of three gateway processes sharing one PostgreSQL schema and one Redis; `env` adds to
 * (or overrides) each node's settings. Undefined when PostgreSQL or Redis is skipped.
 */
export async function startCluster(t: TestContext, env: Record<string, string> = {}) {
  const postgres = await postgresTarget(t);
  const redis = await redisTarget(t);
  if (postgres === undefined || postgres.kind !== 'postgres' || redis === undefined)
    return undefined;
  const schema = postgres.schema as string;
  // Migrated once here, as a deployment step would, so that the nodes start side by side.
  const database = await openDatabase(postgres);
  t.after(() => database.close());
  const secret = randomBytes(32).toString('base64url');
  const databaseUrl = new URL(postgres.url);
  databaseUrl.searchParams.set('options', `-c search_path=${schema}`);

  const dataDirs = await Promise.all(
    [0, 1, 2].map(() => mkdtemp(path.join(tmpdir(), 'imagegate-node-'))),
  );
  t.after(() => Promise.all(dataDirs.map((dir) => rm(dir, { recursive: true, force: true }))));
  const nodes: GatewayProcess[] = await Promise.all(
    dataDirs.map((dataDir) =>
      startGatewayProcess({
        IMAGEGATE_DATA_DIR: dataDir,
        IMAGEGATE_SECRET: secret,
        IMAGEGATE_DATABASE_URL: databaseUrl.toString(),
        IMAGEGATE_REDIS_URL: redis.url,
        IMAGEGATE_REDIS_KEY_PREFIX: redis.prefix,
        IMAGEGATE_RESERVATION_TTL_MS: String(RESERVATION_TTL_MS),
        IMAGEGATE_LEDGER_FLUSH_MS: '100',
        IMAGEGATE_TOKEN_CACHE_MS: '0',
        IMAGEGATE_LOG_LEVEL: 'warn',
        IMAGEGATE_IMAGE_PRICES: `${MODEL_A}=0.04,${MODEL_B}=0.02`,
        ...env,
      }),
    ),
  );
  t.after(() => {
    for (const node of nodes) if (node.child.exitCode === null) node.child.kill('SIGKILL');
  });

  const issuer = new TokenIssuer(new SqlTokenStore(database.db), deriveKeys(secret).tokenSigning);
  const limits = new SqlTokenLimitsStore(database.db);
  return {
    nodes,
    database,
    redis: redis.redis,
    redisPrefix: redis.prefix,
    token: async (changes: TokenLimitChanges) => {
      const { token, record } = await issuer.issue({
        name: 'scale-out',
        account: 'cluster-co',
        admin: false,
        expiresInSeconds: undefined,
      });
      await limits.update(record.id, changes);
      return { id: record.id, authorization: `Bearer ${token}` };
    },
    standing: async (tokenId: string) => {
      const found = await limits.find(tokenId);
      return { used: found?.imagesUsed ?? -1, reserved: found?.imagesReserved ?? -1 };
    },
  };
}
