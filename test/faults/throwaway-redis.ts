import { type ChildProcess, spawn } from 'node:child_process';
import type { TestContext } from 'node:test';
import { existsSync } from 'node:fs';
import { Redis } from 'ioredis';
import { freePort } from '../helpers/free-port.js';
import { type FakeDashScope, startFakeDashScope } from '../fixtures/fake-dashscope.js';
import { postgresTarget, SERVICES_REQUIRED } from '../helpers/postgres.js';
import {
  dashScopeChannelEnv,
  eventually,
  type FaultNode,
  nodeDatabaseUrl,
  nodeEnv,
  openBooks,
  type SharedBooks,
  startNodes,
} from './fault-rig.js';

export const REDIS_SERVER = '/usr/bin/redis-server';

/** A redis-server of the test's own on `port`, keeping nothing on disk; killed when the test ends. */
export async function startRedis(t: TestContext, port: number): Promise<ChildProcess> {
  const child = spawn(
    REDIS_SERVER,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const probe = new Redis(port, '127.0.0.1', { lazyConnect: true, retryStrategy: () => 100 });
  probe.on('error', () => undefined);
  await eventually(
    async () => {
      try {
        await probe.connect().catch(() => undefined);
        return (await probe.ping()) === 'PONG';
      } catch {
        return false;
      }
    },
    5000,
    'redis-server answers',
  );
  probe.disconnect();
  return child;
}

/** Gateway nodes on the shared PostgreSQL and a Redis of the test's own, with a fake DashScope. */
export interface NodesOnThrowawayRedis {
  redis: ChildProcess;
  /** The Redis's port, to start it again on or to probe it. */
  port: number;
  fake: FakeDashScope;
  books: SharedBooks;
  nodes: FaultNode[];
}

/** Starts `count` nodes on a Redis the test may kill or stop; undefined when a service is absent. */
export async function nodesOnThrowawayRedis(
  t: TestContext,
  count: number,
): Promise<NodesOnThrowawayRedis | undefined> {
  const target = await postgresTarget(t);
  if (target === undefined || target.kind !== 'postgres') return undefined;
  if (!existsSync(REDIS_SERVER)) {
    if (SERVICES_REQUIRED) throw new Error(`${REDIS_SERVER} is required for this test`);
    t.skip(`SKIPPED: ${REDIS_SERVER} not installed`);
    return undefined;
  }
  const port = await freePort();
  const redis = await startRedis(t, port);
  const fake = await startFakeDashScope();
  t.after(() => fake.close());
  const books = await openBooks(t, target);
  const nodes = await startNodes(
    t,
    count,
    nodeEnv(books, {
      IMAGEGATE_DATABASE_URL: nodeDatabaseUrl(target),
      IMAGEGATE_REDIS_URL: `redis://127.0.0.1:${port}`,
      ...(await dashScopeChannelEnv(t, fake)),
    }),
  );
  return { redis, port, fake, books, nodes };
}
