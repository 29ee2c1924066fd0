import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { it, type TestContext } from 'node:test';
import { Redis } from 'ioredis';
import { startFakeDashScope } from '../fixtures/fake-dashscope.js';
import { postgresTarget, SERVICES_REQUIRED } from '../helpers/postgres.js';
import {
  checkBooks,
  dashScopeChannelEnv,
  eventually,
  nodeDatabaseUrl,
  nodeEnv,
  openBooks,
  startNodes,
  stopGracefully,
  Traffic,
} from './fault-rig.js';

const REDIS_SERVER = '/usr/bin/redis-server';

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

/** A redis-server of the test's own on `port`, keeping nothing on disk; killed when the test ends. */
async function startRedis(t: TestContext, port: number): Promise<ChildProcess> {
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

it('a Redis that dies and comes back: nodes keep serving (limits fail open), enforce limits again once it is back, and bill exactly', async (t) => {
  const target = await postgresTarget(t);
  if (target === undefined || target.kind !== 'postgres') return;
  if (!existsSync(REDIS_SERVER)) {
    if (SERVICES_REQUIRED) throw new Error(`${REDIS_SERVER} is required for this test`);
    t.skip(`SKIPPED: ${REDIS_SERVER} not installed`);
    return;
  }
  const port = await freePort();
  const redis = await startRedis(t, port);
  const fake = await startFakeDashScope();
  t.after(() => fake.close());
  const books = await openBooks(t, target);
  const nodes = await startNodes(
    t,
    2,
    nodeEnv(books, {
      IMAGEGATE_DATABASE_URL: nodeDatabaseUrl(target),
      IMAGEGATE_REDIS_URL: `redis://127.0.0.1:${port}`,
      ...(await dashScopeChannelEnv(t, fake)),
    }),
  );
  const token = await books.token({ requestsPerMinute: 2 });
  const traffic = new Traffic(fake, token.authorization, 1);

  // Redis up: the limit of 2 per minute holds across both nodes.
  const limited = await traffic.round('limited', nodes, 2);
  assert.deepEqual(limited.map((outcome) => outcome.status).sort(), [200, 200, 429, 429]);

  // Redis dies: requests are served, unlimited, and nodes stay up.
  redis.kill('SIGKILL');
  await once(redis, 'exit');
  const unenforced = await traffic.round('redis-down', nodes, 3);
  assert.deepEqual(
    unenforced.map((outcome) => outcome.status),
    unenforced.map(() => 200),
    'rate limits fail open while Redis is away',
  );
  for (const outcome of unenforced)
    assert.ok(outcome.ms < 3000, `${outcome.requestId}: ${outcome.ms} ms`);
  assert.ok(
    nodes.every((node) => node.alive()),
    'no node exited',
  );

  // Redis comes back (empty, as after a restart): the nodes reconnect and enforce again.
  await startRedis(t, port);
  let round = 0;
  await eventually(
    async () => {
      const answers = await traffic.round(`redis-back-${round++}`, nodes, 2);
      return answers.some((outcome) => outcome.status === 429);
    },
    15_000,
    'limits are enforced again',
  );
  assert.ok(
    nodes.every((node) => node.alive()),
    'no node exited',
  );
  // A graceful stop writes every node's last ledger rows; then the books must balance exactly.
  await stopGracefully(nodes);
  await checkBooks(books, token.id, traffic.outcomes, () => false);
});
