import assert from 'node:assert/strict';
import { once } from 'node:events';
import { type AddressInfo, createServer, connect as connectTcp, type Socket } from 'node:net';
import { it, type TestContext } from 'node:test';
import { Redis } from 'ioredis';
import { RedisRateLimiter } from '../../src/admission/redis-rate-limiter.js';
import { openRedis } from '../../src/bootstrap/open-redis.js';
import { silentLog } from '../../src/support/log.js';
import { eventually } from '../helpers/billing-gateway.js';
import { redisTarget } from '../helpers/redis.js';

// A concurrency slot must never stay held by nobody: a release that cannot be sent is sent once
// Redis is back, and a gate script the gateway stopped waiting for is never sent again later.

const SLOT = { key: 'concurrency:tok_1', holder: 'holder-1' };

it('sends a slot release that found Redis reconnecting once it is ready again', async (t) => {
  const target = await redisTarget(t);
  if (target === undefined) return;
  const redis = new Redis(target.url, { enableOfflineQueue: false, retryStrategy: () => 50 });
  redis.on('error', () => undefined);
  t.after(() => redis.disconnect());
  await once(redis, 'ready');
  const limiter = new RedisRateLimiter(redis, target.prefix, false);
  const slots = () => target.redis.zcard(`${target.prefix}slots:${SLOT.key}`);
  assert.equal((await limiter.acquireSlot(SLOT, 1, 60_000)).acquired, true);
  assert.equal(await slots(), 1);

  redis.disconnect(true);
  await assert.rejects(limiter.releaseSlot(SLOT));
  await eventually(async () => (await slots()) === 0);
  assert.equal(
    (await limiter.acquireSlot({ ...SLOT, holder: 'holder-2' }, 1, 60_000)).acquired,
    true,
  );
});

it('never sends a timed-out gate script again on the next connection', async (t) => {
  const target = await redisTarget(t);
  if (target === undefined) return;
  const proxy = await stallingProxy(t, new URL(target.url));
  const redis = await openRedis(`redis://127.0.0.1:${proxy.port}`, silentLog);
  t.after(() => redis.disconnect());
  const limiter = new RedisRateLimiter(redis, target.prefix, false);
  const slots = () => target.redis.zcard(`${target.prefix}slots:${SLOT.key}`);

  // The script goes out but never reaches Redis; the connection then drops, and the next one is
  // slow to become ready: the call times out (1 s) while the client reconnects.
  proxy.stall();
  const passing = limiter.pass({
    slot: { hold: SLOT, limit: 1, ttlMs: 60_000 },
    rate: { key: 'rpm:tok_1', rule: { limit: 100, windowMs: 60_000 } },
  });
  await eventually(() => proxy.heldBackBytes() > 0);
  proxy.dropAndDelayNext(1_200);
  await assert.rejects(passing, /timed out/);
  // As the gate does after a failed call.
  await limiter.releaseSlot(SLOT).catch(() => undefined);
  // Polled: events.once would also reject on any 'error' the reconnecting client emits.
  await eventually(() => redis.status === 'ready');
  // Answered in order on the new connection: a script sent again would have run before it.
  assert.equal(await redis.ping(), 'PONG');
  assert.equal(await slots(), 0, 'no slot is left taken');
  assert.equal(
    await target.redis.exists(`${target.prefix}rate:rpm:tok_1`),
    0,
    'the script never ran: it was not sent again on the new connection',
  );
});

/**
 * A TCP proxy in front of Redis that can hold back what clients send (`stall`, counting the bytes),
 * and drop every connection, holding back the data of the next new one for `ms`
 * (`dropAndDelayNext`).
 */
async function stallingProxy(
  t: TestContext,
  redisUrl: URL,
): Promise<{
  port: number;
  stall(): void;
  heldBackBytes(): number;
  dropAndDelayNext(ms: number): void;
}> {
  let stalled = false;
  let heldBack = 0;
  let delayNextMs = 0;
  const clients = new Set<Socket>();
  const server = createServer((client) => {
    clients.add(client);
    const upstream = connectTcp(Number(redisUrl.port || 6379), redisUrl.hostname);
    // A new connection's data waits, in order, until it opens.
    let waiting: Buffer[] | undefined = delayNextMs > 0 ? [] : undefined;
    if (waiting !== undefined)
      setTimeout(() => {
        for (const chunk of waiting ?? []) upstream.write(chunk);
        waiting = undefined;
      }, delayNextMs);
    delayNextMs = 0;
    client.on('data', (chunk: Buffer) => {
      if (stalled) {
        heldBack += chunk.length;
        return;
      }
      if (waiting !== undefined) waiting.push(chunk);
      else upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => client.write(chunk));
    for (const [socket, other] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      socket.on('error', () => undefined);
      socket.on('close', () => {
        clients.delete(client);
        other.destroy();
      });
    }
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    for (const client of clients) client.destroy();
    server.close();
  });
  return {
    port: (server.address() as AddressInfo).port,
    stall: () => {
      stalled = true;
    },
    heldBackBytes: () => heldBack,
    dropAndDelayNext: (ms) => {
      stalled = false;
      delayNextMs = ms;
      for (const client of clients) client.destroy();
    },
  };
}
