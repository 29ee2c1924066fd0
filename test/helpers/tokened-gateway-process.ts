import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { deriveKeys } from '../../src/auth/keys.js';
import { TokenIssuer } from '../../src/auth/token-issuer.js';
import { openDatabase } from '../../src/store/database/database.js';
import { SqlTokenStore } from '../../src/store/token-store.js';
import { type GatewayProcess, startGatewayProcess } from '../scale-out/gateway-process.js';
import { type GaugeReader, readGauges } from './metrics-gauges.js';

/**
 * A gateway server process (src/main.ts) on its built-in local channel, with a data dir of its
 * own and two tokens issued into its database before it starts: a caller's and an admin's (who
 * may read GET /metrics).
 */
export interface TokenedGatewayProcess extends GatewayProcess, GaugeReader {
  port: number;
  authorization: string;
  adminAuthorization: string;
  /** Stops the process (SIGKILL if it does not exit on SIGTERM) and removes its data dir. */
  stop(): Promise<void>;
}

export async function startTokenedGatewayProcess(
  env: Record<string, string> = {},
): Promise<TokenedGatewayProcess> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'imagegate-tokened-'));
  const secret = randomBytes(32).toString('base64url');
  const opened = await openDatabase({ kind: 'sqlite', file: path.join(dataDir, 'imagegate.db') });
  const tokens: string[] = [];
  try {
    const issuer = new TokenIssuer(new SqlTokenStore(opened.db), deriveKeys(secret).tokenSigning);
    for (const admin of [false, true]) {
      const { token } = await issuer.issue({
        name: admin ? 'admin' : 'caller',
        account: 'default',
        admin,
        expiresInSeconds: undefined,
      });
      tokens.push(`Bearer ${token}`);
    }
  } finally {
    await opened.close();
  }
  const gateway = await startGatewayProcess({
    IMAGEGATE_DATA_DIR: dataDir,
    IMAGEGATE_SECRET: secret,
    IMAGEGATE_LOG_LEVEL: 'warn',
    ...env,
  });
  const [authorization, adminAuthorization] = tokens as [string, string];
  const port = Number(new URL(gateway.url).port);
  return {
    ...gateway,
    port,
    authorization,
    adminAuthorization,
    gauges: () => readGauges(gateway.url, { authorization: adminAuthorization }),
    stop: async () => {
      if (gateway.child.exitCode === null && gateway.child.signalCode === null) {
        const killer = setTimeout(() => gateway.child.kill('SIGKILL'), 15_000);
        gateway.child.kill('SIGTERM');
        await gateway.exited;
        clearTimeout(killer);
      }
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
