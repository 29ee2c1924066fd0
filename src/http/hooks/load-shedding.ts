import { Transform, type TransformCallback } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { GatewayError } from '../../errors/gateway-error.js';
import { leaveErrorsToReaders } from '../../support/stream-errors.js';
import type { InFlightBudget } from '../in-flight-budget.js';
import { whenClosed } from '../when-closed.js';

/** Routes that answer however loaded the gateway is: an orchestrator must still see it alive. */
const NEVER_SHED = new Set(['/healthz', '/readyz', '/metrics']);
/** Shed load is usually gone within a second or two. */
const RETRY_AFTER_S = '1';

function overloaded(what: string): GatewayError {
  return new GatewayError('Overloaded', `the gateway is at its limit of ${what}; retry shortly`, {
    'Retry-After': RETRY_AFTER_S,
  });
}

/**
 * The first hook that weighs a request (only the request id and CORS come before it): it takes
 * a place in the in-flight budget from the declared `Content-Length`, or refuses the request with
 * 503 Overloaded before any of its body is read. A body without a declared length is counted
 * while it streams in and cut off once the budget is spent. The place is given back once, when the
 * answer is over, whatever its end; bytes that still arrive after it (a refused body the caller
 * keeps sending) are not counted.
 */
export function addLoadSheddingHooks(app: FastifyInstance, budget: InFlightBudget): void {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.decorateRequest('countStreamedBody', undefined);
  app.addHook('onRequest', (request, reply, done) => {
    if (NEVER_SHED.has(request.routeOptions.url ?? '')) return done();
    // Requests on kept-alive connections still arrive while the server drains.
    if (closing) return done(overloaded('its work: it is shutting down'));
    const declared = Number(request.headers['content-length']);
    // A body larger than the whole budget is over every route's body limit too (the budget is at
    // least IMAGEGATE_MAX_BODY_BYTES), so it is never read into memory: it holds no bytes here,
    // and its route refuses it (413) as no wait would admit it, which 503 with Retry-After says.
    const bodyBytes =
      Number.isSafeInteger(declared) && declared > 0 && declared <= budget.maxBodyBytes
        ? declared
        : 0;
    const place = budget.tryEnter(bodyBytes);
    if (place === undefined)
      return done(
        overloaded(
          budget.requests >= budget.maxRequests
            ? `${budget.maxRequests} requests in flight`
            : `${budget.maxBodyBytes} bytes of request bodies in flight`,
        ),
      );
    whenClosed(reply, () => place.leave());
    if (bodyBytes === 0 && request.headers['transfer-encoding'] !== undefined)
      request.countStreamedBody = (bytes) => place.tryAddBodyBytes(bytes);
    done();
  });

  app.addHook('preParsing', (request, _reply, payload, done) => {
    const count = request.countStreamedBody;
    if (count === undefined) return done(null, payload);
    const counted: Transform & { receivedEncodedLength?: number } = new Transform({
      transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
        counted.receivedEncodedLength = (counted.receivedEncodedLength ?? 0) + chunk.length;
        if (count(chunk.length)) callback(null, chunk);
        else callback(overloaded('bytes of request bodies in flight'));
      },
    });
    payload.on('error', (error) => counted.destroy(error));
    // A route may refuse the request without reading its body (a wrong Content-Type).
    leaveErrorsToReaders(counted);
    done(null, payload.pipe(counted));
  });
}

declare module 'fastify' {
  interface FastifyRequest {
    /** For a body of undeclared length: counts arriving bytes; false once the budget is spent. */
    countStreamedBody: ((bytes: number) => boolean) | undefined;
  }
}
