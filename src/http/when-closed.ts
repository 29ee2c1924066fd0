import type { FastifyReply } from 'fastify';

/**
 * Runs `listener` once the answer's connection is over: at the response's `close`, or at once
 * when that has come already. A hook that runs after an `await` (authentication, the limits, an
 * Idempotency-Key claim) may find the caller gone: a listener added after the `close` would never
 * run, and what it should free (a concurrency slot, a claim) would be held for good.
 */
export function whenClosed(reply: FastifyReply, listener: () => void): void {
  const response = reply.raw;
  if (response.closed || response.destroyed) listener();
  else response.once('close', listener);
}
