import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { CallerGone } from '../errors/caller-gone.js';
import { errorBody, GatewayError } from '../errors/gateway-error.js';
import {
  DATABASE_RETRY_AFTER_S,
  isDatabaseUnavailable,
} from '../store/database/database-unavailable.js';
import { bodyErrors } from './body-errors.js';
import { lingeringOf } from './lingering-close.js';

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

/**
 * The error each request was answered with: every error body goes through sendError, and an event
 * stream's error event through `answeredWithError`.
 */
const answeredErrors = new WeakMap<FastifyRequest, GatewayError>();

export function answeredError(request: FastifyRequest): GatewayError | undefined {
  return answeredErrors.get(request);
}

/** Notes the error a request was answered with, as an error body or an event stream's last event. */
export function answeredWithError(request: FastifyRequest, error: GatewayError): void {
  answeredErrors.set(request, error);
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
  answeredWithError(reply.request, error);
  for (const [name, value] of Object.entries(error.headers)) reply.header(name, value);
  for (const [name, value] of Object.entries(shape.headers?.(error) ?? {}))
    reply.header(name, value);
  lingeringOf(reply)?.beforeAnswer(reply);
  return reply
    .code(error.status)
    .type('application/json; charset=utf-8')
    .send(shape.body(error, reply.request.id));
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
