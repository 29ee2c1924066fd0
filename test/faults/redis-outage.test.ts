import assert from 'node:assert/strict';
import { once } from 'node:events';
import { it } from 'node:test';
import { checkBooks, eventually, stopGracefully, Traffic } from './fault-rig.js';
import { nodesOnThrowawayRedis, startRedis } from './throwaway-redis.js';

it('a Redis that dies and comes back: nodes keep serving (limits fail open), enforce limits again once it is back, and bill exactly', async (t) => {
  const started = await nodesOnThrowawayRedis(t, 2);
  if (started === undefined) return;
  const { redis, port, fake, books, nodes } = started;
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
