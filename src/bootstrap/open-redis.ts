import { Redis } from 'ioredis';
import { type Log, warnAtMostEvery } from '../support/log.js';

const CONNECT_WAIT_MS = 2000;

/**
 * A Redis client for the shared rate limiter. Commands fail at once while disconnected (no
 * offline queue) and time out after a second, so an unreachable Redis costs a request nothing but
 * its limits; the client keeps reconnecting in the background. Commands issued in the same turn of
 * the event loop (the limits of requests that arrived together) go out in one write: each write
 * to a socket is a system call, which on the request path cost more than the commands themselves.
 */
export async function openRedis(url: string, log: Log): Promise<Redis> {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    // A command left unanswered by a dropped connection is not sent again on the next one: the
    // gateway stopped waiting for it (and let its request through), so a gate script run then
    // would take a slot that nobody holds.
    autoResendUnfulfilledCommands: false,
    enableAutoPipelining: true,
    maxRetriesPerRequest: 1,
    commandTimeout: 1000,
    connectTimeout: CONNECT_WAIT_MS,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
  });
  // Reconnection attempts repeat the same error; say it at most every ten seconds.
  const warn = warnAtMostEvery(log, 10_000);
  redis.on('error', (error: Error) => {
    warn({ err: error.message }, 'Redis unreachable: rate and concurrency limits not enforced');
  });
  await new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      redis.off('ready', done);
      resolve();
    };
    const timer = setTimeout(done, CONNECT_WAIT_MS);
    redis.once('ready', done);
  });
  return redis;
}
