import type { TestContext } from 'node:test';
import { MODEL_A, MODEL_B } from '../../src/domain/models.js';
import type { DatabaseTarget } from '../../src/store/database/database.js';
import type { FakeDashScope } from '../fixtures/fake-dashscope.js';
import { postgresTarget } from '../helpers/postgres.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';
import { type Books, booksOf, dashScopeChannelEnv } from './fault-rig.js';

/** Where a serving gateway keeps its state; undefined when that database is skipped. */
type BackendFactory = (t: TestContext) => Promise<{ database?: DatabaseTarget } | undefined>;

/** SQLite (the gateway's own file in its data dir) and PostgreSQL (a schema of the test's own). */
export const BACKENDS: [string, BackendFactory][] = [
  ['SQLite', async () => ({})],
  [
    'PostgreSQL',
    async (t) => {
      const database = await postgresTarget(t);
      return database === undefined ? undefined : { database };
    },
  ],
];

/** Millionths of a unit per image, as the serving gateway is configured. */
export const PRICE_MICROS = { [MODEL_A]: 40_000, [MODEL_B]: 20_000 };

/** A whole gateway in this process, listening on loopback, its one channel the fake DashScope. */
export interface ServingGateway {
  url: string;
  gateway: TestGateway;
  books: Books;
  /** The PostgreSQL target; undefined on SQLite. */
  postgres: Extract<DatabaseTarget, { kind: 'postgres' }> | undefined;
}

export async function startServingGateway(
  t: TestContext,
  backend: BackendFactory,
  fake: FakeDashScope,
  channel: { passThroughUrls?: boolean } = {},
): Promise<ServingGateway | undefined> {
  const chosen = await backend(t);
  if (chosen === undefined) return undefined;
  const gateway = await startTestGateway({
    env: {
      HOST: '127.0.0.1',
      IMAGEGATE_LEDGER_FLUSH_MS: '20',
      IMAGEGATE_IMAGE_PRICES: `${MODEL_A}=0.04,${MODEL_B}=0.02`,
      ...(await dashScopeChannelEnv(t, fake, channel)),
    },
    ...chosen,
  });
  t.after(() => gateway.close());
  const url = await gateway.listen();
  const { services, admission } = gateway;
  return {
    url,
    gateway,
    books: booksOf(services.tokenIssuer, admission.limits, admission.usage),
    postgres: chosen.database?.kind === 'postgres' ? chosen.database : undefined,
  };
}
