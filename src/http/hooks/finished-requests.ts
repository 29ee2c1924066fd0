import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { UsageRow } from '../../domain/usage-row.js';
import { LEDGER_CODES } from '../../errors/error-table.js';
import type { GatewayMetrics } from '../../metrics/gateway-metrics.js';
import type { FinishedRequest } from '../../metrics/finished-request.js';
import { answerFinished, watchFinish } from '../answer-finished.js';
import { answeredError } from '../error-reply.js';
import { stageTimesOf } from '../stage-times.js';
import { endOfRequest, outcomeSoFar } from './ledger.js';

/** The levels at which the request line is written. */
const LOGGED_AT_INFO = new Set(['trace', 'debug', 'info']);

const roundedMs = (ms: number | undefined) => (ms === undefined ? undefined : Math.round(ms));

/**
 * Logs and counts one request that ended; a request already reported is not reported again.
 * `elapsedMs` is given for replies Fastify did not time (refusals before routing); otherwise the
 * reply's own elapsed time is used.
 */
export type ReportFinished = (
  request: FastifyRequest,
  reply: FastifyReply,
  callerLeft: boolean,
  elapsedMs?: number,
) => void;

/**
 * One log line and one count per request, once it ends: answered, or left by its caller before
 * the answer. The path is logged without its query, which carries image URL signatures; tokens,
 * keys and image data are never logged.
 */
export function finishedRequestReporter(metrics: GatewayMetrics | undefined): ReportFinished {
  const reported = new WeakSet<FastifyRequest>();

  const write = (
    request: FastifyRequest,
    reply: FastifyReply,
    callerLeft: boolean,
    elapsedMs: number,
    row: UsageRow | undefined,
  ) => {
    const times = stageTimesOf(outcomeSoFar(request), elapsedMs);
    // A request of an accounted scope is reported as its ledger row records it.
    const finished: FinishedRequest =
      row === undefined
        ? {
            route: request.routeOptions.url,
            method: request.method,
            status: callerLeft ? LEDGER_CODES.CallerGone.status : reply.statusCode,
            code: callerLeft ? 'CallerGone' : answeredError(request)?.code,
            model: undefined,
            channel: undefined,
            imagesDelivered: 0,
            imagesBilled: 0,
            times: undefined,
          }
        : {
            route: request.routeOptions.url,
            method: request.method,
            status: row.status,
            code: row.errorCode,
            model: row.model,
            channel: row.channel,
            imagesDelivered: row.imagesDelivered,
            imagesBilled: row.imagesBilled,
            times,
          };
    metrics?.requestFinished(finished);
    // The line is not even built at a level that would drop it.
    if (!LOGGED_AT_INFO.has(request.log.level)) return;
    request.log.info(
      {
        method: finished.method,
        path: request.url.split('?', 1)[0],
        status: finished.status,
        code: finished.code,
        token_id: request.principal?.tokenId,
        model: finished.model,
        channel: finished.channel,
        images_delivered: row === undefined ? undefined : finished.imagesDelivered,
        images_billed: row === undefined ? undefined : finished.imagesBilled,
        ms: Math.round(times.totalMs),
        gateway_ms: roundedMs(finished.times?.gatewayMs),
        upstream_ms: roundedMs(finished.times?.upstreamMs),
        storage_ms: roundedMs(finished.times?.storageMs),
        queue_ms: roundedMs(finished.times?.queueMs),
      },
      'request',
    );
  };

  return (request, reply, callerLeft, elapsedMs = reply.elapsedTime) => {
    if (reported.has(request)) return;
    reported.add(request);
    // Reported once the request's work is over: an answer billed after its hand-over, or a bill
    // under way when its caller left, is reported as its ledger row records it.
    const ended = endOfRequest(request, reply, callerLeft);
    if (ended instanceof Promise)
      void ended.then((row) => write(request, reply, callerLeft, elapsedMs, row ?? undefined));
    else write(request, reply, callerLeft, elapsedMs, ended ?? undefined);
  };
}

/**
 * Reports every request that reaches the hooks once it ends: on Fastify's onResponse, or on the
 * connection's close when the caller left before the answer (which onResponse never sees).
 */
export function addFinishedRequestsHooks(app: FastifyInstance, report: ReportFinished): void {
  app.addHook('onRequest', (request, reply, done) => {
    watchFinish(reply.raw);
    reply.raw.once('close', () => {
      if (!answerFinished(reply.raw)) report(request, reply, true);
    });
    done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    report(request, reply, false);
    done();
  });
}
