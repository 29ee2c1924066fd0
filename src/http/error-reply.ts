import type { IncomingMessage } from 'node:http';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { ErrorCode } from '../errors/error-table.js';
import { CallerGone } from '../errors/caller-gone.js';
import { errorBody, GatewayError } from '../errors/gateway-error.js';
import { DATABASE_RETRY_AFTER_S, isDatabaseUnavailable } from '../store/database-unavailable.js';
import { bodyErrors } from './body-errors.js';

/**
 * A refused request's body of at most this many bytes is read and dropped, so that its caller
 * keeps the connection (a rate-limited caller would otherwise reconnect for every 429); a larger
 * one is never waited for.
 */
const DRAINED_BODY_MAX_BYTES = 64 * 1024;
/** How long the rest of such a body may take; a caller that does not send it loses the connection. */
const DRAIN_WAIT_MS = 1000;

/** Fastify's own request errors, translated into the gateway's error table. */
function fromFastifyError(error: FastifyError): GatewayError | undefined {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return bodyErrors.tooLarge();
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return bodyErrors.wrongMediaType();
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return bodyErrors.empty();
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return bodyErrors.notJson();
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return bodyErrors.lengthMismatch();
    default:
      break;
  }
  // Fastify marks client mistakes (bad JSON, aborted uploads, proto poisoning) with a 4xx status.
  if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
    if (error.statusCode === 413)
      return new GatewayError('RequestTooLarge', 'request body is too large');
    return new GatewayError(
      'InvalidParameter',
      `body: ${error.statusCode === 400 ? 'is not valid JSON' : 'could not be read'}`,
    );
  }
  return undefined;
}

/** The code of the error each request was answered with; every error body goes through sendError. */
const answeredCodes = new WeakMap<FastifyRequest, ErrorCode>();

export function answeredErrorCode(request: FastifyRequest): ErrorCode | undefined {
  return answeredCodes.get(request);
}

/** How a front door words its errors: the body, and headers its clients read beside it. */
export interface ErrorShape {
  body(error: GatewayError, requestId: string): object;
  headers?(error: GatewayError): Record<string, string>;
}

/** The error body of docs/errors.md, which every route but the OpenAI ones answers with. */
export const GATEWAY_ERROR_SHAPE: ErrorShape = { body: errorBody };

export function sendError(
  reply: FastifyReply,
  error: GatewayError,
  shape: ErrorShape = GATEWAY_ERROR_SHAPE,
): FastifyReply {
  answeredCodes.set(reply.request, error.code);
  for (const [name, value] of Object.entries(error.headers)) reply.header(name, value);
  for (const [name, value] of Object.entries(shape.headers?.(error) ?? {}))
    reply.header(name, value);
  // Refused before its body arrived: a small body is read and dropped (Node does it once the
  // answer is sent), within a short wait; a large one is not waited for.
  const request = reply.request.raw;
  if (!request.complete) {
    const declared = declaredBodyBytes(request);
    if (declared > DRAINED_BODY_MAX_BYTES) reply.header('connection', 'close');
    else if (declared > 0) closeUnlessCompleteWithin(request, DRAIN_WAIT_MS);
  }
  return reply
    .code(error.status)
    .type('application/json; charset=utf-8')
    .send(shape.body(error, reply.request.id));
}

/** The body's declared length; chunks of unknown length count as unbounded. */
function declaredBodyBytes(request: IncomingMessage): number {
  const { headers } = request;
  if (headers['transfer-encoding'] !== undefined) return Number.POSITIVE_INFINITY;
  return Number(headers['content-length'] ?? 0);
}

function closeUnlessCompleteWithin(request: IncomingMessage, ms: number): void {
  // Destroying an incomplete request destroys its socket (a request made by Fastify's inject
  // has none, and is only ended).
  const timer = setTimeout(() => {
    if (!request.complete) request.destroy();
  }, ms);
  timer.unref();
  request.once('close', () => clearTimeout(timer));
}

/** The error table's entry for anything a handler or hook threw; unexpected errors are logged. */
export function gatewayErrorOf(error: unknown, request: FastifyRequest): GatewayError {
  const known = error instanceof GatewayError ? error : fromFastifyError(error as FastifyError);
  if (known !== undefined) {
    if (known.status >= 500)
      request.log.warn({ code: known.code, message: known.message }, 'request failed');
    return known;
  }
  if (isDatabaseUnavailable(error)) {
    request.log.warn({ err: (error as Error).message }, 'database unavailable');
    return new GatewayError(
      'Overloaded',
      "the gateway's database is unavailable or slow; nothing was billed, retry shortly",
      { 'Retry-After': String(DATABASE_RETRY_AFTER_S) },
    );
  }
  request.log.error({ err: error }, 'unexpected error');
  return new GatewayError(
    'InternalError',
    'an internal error occurred; quote the request_id when reporting it',
  );
}

export function handleError(
  error: unknown,
  request: FastifyRequest,
  reply: FastifyReply,
): FastifyReply {
  if (error instanceof CallerGone) return answerCallerGone(request, reply);
  return sendError(reply, gatewayErrorOf(error, request));
}

/** Expected: the caller closed its connection, and nobody is left to answer. Logged, not an error. */
export function answerCallerGone(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  request.log.info({ request_id: request.id }, 'caller disconnected before the answer');
  return reply.code(499).send();
}
