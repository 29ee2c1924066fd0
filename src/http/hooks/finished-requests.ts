import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { CALLER_GONE_STATUS } from '../../ledger/request-account.js';
import type { GatewayMetrics } from '../../metrics/gateway-metrics.js';
import type { RequestOutcome } from '../../metrics/request-outcome.js';
import { answeredErrorCode } from '../error-reply.js';
import { stageTimesOf } from '../stage-times.js';

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
  ) => {
    const account = request.account;
    account?.describeModelOf(request.body);
    const times = stageTimesOf(account, elapsedMs);
    // A row written already (billed before or after the answer) is reported as it stands.
    const row = account?.writtenRow;
    const gone = callerLeft && row === undefined;
    const outcome: RequestOutcome = {
      route: request.routeOptions.url,
      method: request.method,
      // A stream that ended with an error event is counted with the error's status, as its ledger
      // row is, though its head said 200.
      status: gone
        ? CALLER_GONE_STATUS
        : (row?.status ?? account?.statusFor(reply.statusCode) ?? reply.statusCode),
      code: gone
        ? 'CallerGone'
        : row === undefined
          ? (answeredErrorCode(request) ?? account?.errorCode)
          : row.errorCode,
      model: account?.model,
      channel: account?.channel,
      imagesDelivered: row?.imagesDelivered ?? account?.imagesDelivered ?? 0,
      imagesBilled: row?.imagesBilled ?? account?.imagesBilled ?? 0,
      times: account === undefined ? undefined : times,
    };
    metrics?.requestFinished(outcome);
    // The line is not even built at a level that would drop it.
    if (!LOGGED_AT_INFO.has(request.log.level)) return;
    request.log.info(
      {
        method: outcome.method,
        path: request.url.split('?', 1)[0],
        status: outcome.status,
        code: outcome.code,
        token_id: request.principal?.tokenId,
        model: outcome.model,
        channel: outcome.channel,
        images_delivered: account === undefined ? undefined : outcome.imagesDelivered,
        images_billed: account === undefined ? undefined : outcome.imagesBilled,
        ms: Math.round(times.totalMs),
        gateway_ms: roundedMs(outcome.times?.gatewayMs),
        upstream_ms: roundedMs(outcome.times?.upstreamMs),
        storage_ms: roundedMs(outcome.times?.storageMs),
        queue_ms: roundedMs(outcome.times?.queueMs),
      },
      'request',
    );
  };

  return (request, reply, callerLeft, elapsedMs = reply.elapsedTime) => {
    if (reported.has(request)) return;
    reported.add(request);
    const account = request.account;
    // Reported once the request's work is over: an answer billed after its hand-over, or a bill
    // under way when its caller left, is reported as its ledger row records it.
    if (account?.busy === true)
      void account.idle().then(() => write(request, reply, callerLeft, elapsedMs));
    else write(request, reply, callerLeft, elapsedMs);
  };
}

/**
 * Reports every request that reaches the hooks once it ends: on Fastify's onResponse, or on the
 * connection's close when the caller left before the answer (which onResponse never sees).
 */
export function addFinishedRequestsHooks(app: FastifyInstance, report: ReportFinished): void {
  app.addHook('onRequest', (request, reply, done) => {
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) report(request, reply, true);
    });
    done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    report(request, reply, false);
    done();
  });
}
