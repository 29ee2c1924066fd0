import type { FastifyInstance } from 'fastify';
import type { StageTimes } from '../../metrics/finished-request.js';
import { stageTimesOf } from '../stage-times.js';
import { outcomeSoFar } from './ledger.js';

const durationOf = (ms: number): string => String(Math.round(ms * 10) / 10);

/**
 * The `Server-Timing` header: `gateway` (everything but the upstream), then `queue` (waiting for
 * a turn in the gateway's own queues, part of `gateway`), `upstream` and `storage` when those
 * stages ran.
 */
export function serverTiming(times: StageTimes): string {
  const entries = [`gateway;dur=${durationOf(times.gatewayMs)}`];
  if (times.queueMs !== undefined) entries.push(`queue;dur=${durationOf(times.queueMs)}`);
  if (times.upstreamMs !== undefined) entries.push(`upstream;dur=${durationOf(times.upstreamMs)}`);
  if (times.storageMs !== undefined) entries.push(`storage;dur=${durationOf(times.storageMs)}`);
  return entries.join(', ');
}

/** Every answer of `scope`'s routes, errors included, says where its time went. */
export function addServerTimingHooks(scope: FastifyInstance): void {
  scope.addHook('onSend', (request, reply, payload, done) => {
    reply.header(
      'server-timing',
      serverTiming(stageTimesOf(outcomeSoFar(request), reply.elapsedTime)),
    );
    done(null, payload);
  });
}
