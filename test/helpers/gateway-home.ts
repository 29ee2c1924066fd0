import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { deriveKeys } from '../../src/auth/keys.js';
import { TokenIssuer } from '../../src/auth/token-issuer.js';
import type { UsageRow } from '../../src/domain/usage-row.js';
import { openDatabase } from '../../src/store/database/database.js';
import { SqlTokenStore } from '../../src/store/token-store.js';
import { SqlUsageStore } from '../../src/store/usage-store.js';
import type { FakeDashScope } from '../fixtures/fake-dashscope.js';
import { temporaryDirectory } from './temporary-directory.js';

/**
 * What a gateway process started by a test needs before it starts: a data dir of its own (the
 * SQLite database, the images), a secret, a token issued into that database, and a config file
 * whose one channel is a fake DashScope.
 */
export interface GatewayHome {
  dataDir: string;
  /** The environment that points a gateway process at this home. */
  env: Record<string, string>;
  authorization: string;
  /** The usage ledger, read from the database file; call it once the process has exited. */
  ledgerRows(): Promise<UsageRow[]>;
}

export async function prepareGatewayHome(
  t: TestContext,
  upstream: Pick<FakeDashScope, 'url' | 'apiKey'>,
): Promise<GatewayHome> {
  const dataDir = await temporaryDirectory('imagegate-home-');
  const database = { kind: 'sqlite', file: path.join(dataDir, 'imagegate.db') } as const;
  const secret = randomBytes(32).toString('base64url');

  const opened = await openDatabase(database);
  let token: string;
  try {
    const issuer = new TokenIssuer(new SqlTokenStore(opened.db), deriveKeys(secret).tokenSigning);
    ({ token } = await issuer.issue({
      name: 'shutdown',
      account: 'default',
      admin: false,
      expiresInSeconds: undefined,
    }));
  } finally {
    await opened.close();
  }

  const configFile = path.join(dataDir, 'gateway.yaml');
  await writeFile(
    configFile,
    [
      'channels:',
      '  - name: fake-dashscope',
      '    type: dashscope',
      `    base_url: ${upstream.url}`,
      '    api_key_env: FAKE_DASHSCOPE_KEY',
    ].join('\n'),
  );

  return {
    dataDir,
    env: {
      IMAGEGATE_DATA_DIR: dataDir,
      IMAGEGATE_SECRET: secret,
      IMAGEGATE_CONFIG: configFile,
      FAKE_DASHSCOPE_KEY: upstream.apiKey,
      IMAGEGATE_LOG_LEVEL: 'warn',
    },
    authorization: `Bearer ${token}`,
    ledgerRows: async () => {
      const reopened = await openDatabase(database);
      try {
        return await new SqlUsageStore(reopened).list({}, 1000);
      } finally {
        await reopened.close();
      }
    },
  };
}
