import { loadOrCreateSecret } from '../auth/secret.js';
import { deriveKeys, type DerivedKeys } from '../auth/keys.js';
import { TokenIssuer } from '../auth/token-issuer.js';
import { loadExternalKeys, TokenVerifier } from '../auth/token-verifier.js';
import type { Config } from '../config/config.js';
import { type Log, silentLog } from '../support/log.js';
import { type Database, openDatabase } from '../store/database/database.js';
import { SqlTokenStore, type TokenRecord, type TokenStore } from '../store/token-store.js';
import { TtlCache } from '../support/ttl-cache.js';

/** The stateful parts shared by the server and the CLI, opened from one configuration. */
export interface Services {
  config: Config;
  database: Database;
  keys: DerivedKeys;
  tokenStore: TokenStore;
  tokenIssuer: TokenIssuer;
  tokenVerifier: TokenVerifier;
  /** The token rows the verifier remembers for IMAGEGATE_TOKEN_CACHE_MS. */
  tokenRows: TtlCache<TokenRecord | undefined>;
  close(): Promise<void>;
}

export async function openServices(
  config: Config,
  now: () => number = Date.now,
  log: Log = silentLog,
  sqliteWork: 'background' | 'inline' = 'inline',
): Promise<Services> {
  const secret = await loadOrCreateSecret(config.secret, config.dataDir);
  const keys = deriveKeys(secret);
  const database = await openDatabase(config.database, {
    limits: config.databaseLimits,
    log,
    sqliteWork,
  });
  try {
    const tokenStore = new SqlTokenStore(database.db);
    const external = await loadExternalKeys(config.externalTokens);
    const tokenRows = new TtlCache(tokenStore, config.tokenCacheMs, now);
    return {
      config,
      database,
      keys,
      tokenStore,
      tokenIssuer: new TokenIssuer(tokenStore, keys.tokenSigning, now),
      tokenVerifier: new TokenVerifier(keys.tokenSigning, tokenRows, external, now),
      tokenRows,
      close: () => database.close(),
    };
  } catch (error) {
    await database.close();
    throw error;
  }
}
