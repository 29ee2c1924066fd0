import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createGateway, type Gateway } from '../../src/bootstrap/create-gateway.js';
import { loadConfig } from '../../src/config/load-config.js';
import type { TokenLimitChanges } from '../../src/domain/token-limits.js';
import type { DatabaseTarget } from '../../src/store/database/database.js';

export interface TestGateway extends Gateway {
  dataDir: string;
  /** Issues a gateway token and returns the `Authorization` header value for it. */
  bearer(options?: {
    name?: string;
    account?: string;
    admin?: boolean;
    expiresInSeconds?: number;
    limits?: TokenLimitChanges;
  }): Promise<string>;
}

export interface TestGatewayOptions {
  env?: Record<string, string>;
  /** Overrides the database; default is SQLite in a fresh temporary data dir. */
  database?: DatabaseTarget;
  now?: () => number;
}

/** A whole gateway on a fresh temporary data dir, built by the same code as the server. */
export async function startTestGateway(options: TestGatewayOptions = {}): Promise<TestGateway> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'imagegate-test-'));
  const config = loadConfig({
    IMAGEGATE_DATA_DIR: dataDir,
    IMAGEGATE_LOG_LEVEL: 'silent',
    IMAGEGATE_TOKEN_CACHE_MS: '0',
    PORT: '0',
    ...options.env,
  });
  if (options.database !== undefined) config.database = options.database;
  const gateway = await createGateway(config, options.now);
  return {
    ...gateway,
    dataDir,
    bearer: async (tokenOptions = {}) => {
      const { token, record } = await gateway.services.tokenIssuer.issue({
        name: tokenOptions.name ?? 'test',
        account: tokenOptions.account ?? 'test-account',
        admin: tokenOptions.admin ?? false,
        expiresInSeconds: tokenOptions.expiresInSeconds,
      });
      if (tokenOptions.limits !== undefined)
        await gateway.admission.limits.update(record.id, tokenOptions.limits);
      return `Bearer ${token}`;
    },
    close: async () => {
      await gateway.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
