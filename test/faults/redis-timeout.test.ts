import assert from 'node:assert/strict';
import { it } from 'node:test';
import { Redis } from 'ioredis';
import { MODEL_A } from '../../src/domain/models.js';
import { generate, generationBody } from './fault-rig.js';
import { nodesOnThrowawayRedis } from './throwaway-redis.js';

// A limiter call that times out is not always a call that did nothing: a Redis that is only slow
// (here: stopped, SIGSTOP) runs it once it can. The request went through unlimited meanwhile; the
// concurrency slot the late call takes must not stay held by nobody until its lease runs out.
it('a Redis call that timed out but ran later leaves no concurrency slot held', async (t) => {
  const started = await nodesOnThrowawayRedis(t, 1);
  if (started === undefined) return;
  const { redis, port, books } = started;
  const [node] = started.nodes;
  assert.ok(node);
  const token = await books.token({ maxConcurrent: 1 });
  const ask = (requestId: string) =>
    generate(node.url, {
      authorization: token.authorization,
      body: generationBody(MODEL_A, 1),
      requestId,
    });
  const probe = new Redis(port, '127.0.0.1');
  probe.on('error', () => undefined);
  t.after(() => probe.disconnect());
  const slotsHeld = async () => {
    const keys = await probe.keys('*concurrency*');
    const counts = await Promise.all(keys.map((key) => probe.zcard(key)));
    return counts.reduce((sum, count) => sum + count, 0);
  };

  assert.equal((await ask('before')).status, 200);
  assert.equal(await slotsHeld(), 0);

  redis.kill('SIGSTOP');
  const slow = await ask('redis-stopped');
  redis.kill('SIGCONT');
  assert.equal(slow.status, 200, 'the limiter fails open');
  // Redis now runs what it was sent while stopped, in order, before this probe's command.
  assert.equal(await slotsHeld(), 0, 'no slot is left held by the timed-out call');
  assert.equal((await ask('after')).status, 200, 'the token can use its one slot');
});
