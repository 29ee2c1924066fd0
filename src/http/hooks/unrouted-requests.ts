import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { openAiRoots } from '../../domain/api-paths.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { ReportFinished } from './finished-requests.js';
import { answerFinished, watchFinish } from '../answer-finished.js';
import { type ErrorShape, GATEWAY_ERROR_SHAPE, gatewayErrorOf, sendError } from '../error-reply.js';
import { OPENAI_ERROR_SHAPE } from '../routes/openai-routes.js';
import { echo } from '../../errors/echo.js';

/** Fastify's `maxParamLength`, left at its default: longer than any id a path names. */
export const MAX_PATH_PARAMETER_CHARACTERS = 100;

/**
 * Requests that reach no route are answered 404 in our error shape (OpenAI's under its roots)
 * before their body is read: route and method come before the body (docs/errors.md), so a
 * malformed or oversized body cannot turn a 404 into a 400 or a 413.
 */
export function addUnroutedRequestsHooks(app: FastifyInstance, routePrefix: string): void {
  const shapeOf = errorShapeByPath(routePrefix);
  const notFound = (request: FastifyRequest, reply: FastifyReply) =>
    sendError(
      reply,
      new GatewayError('NotFound', `no route for ${echo(request.method)} ${echo(pathOf(request))}`),
      shapeOf(request),
    );
  app.setNotFoundHandler(notFound);
  // A callback hook: every request passes it, and an async one would cost each a promise.
  app.addHook('onRequest', (request, reply, done) => {
    if (request.is404) void notFound(request, reply);
    else done();
  });
}

/**
 * Fastify's `frameworkErrors`: its refusals of a URL made before any route or hook runs (a
 * percent-escape that does not decode, a path parameter over the routing limit), answered in the
 * same shapes, with the request id as every other answer has it. No hook runs for them, so they
 * are logged and counted here, like every other request.
 */
export function frameworkErrorHandler(routePrefix: string, report: ReportFinished) {
  const shapeOf = errorShapeByPath(routePrefix);
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void => {
    reply.header('x-request-id', request.id);
    // Fastify times only routed replies; routing is where this request's time starts.
    const started = performance.now();
    const reportAnswered = () => report(request, reply, false, performance.now() - started);
    watchFinish(reply.raw);
    reply.raw.once('finish', reportAnswered);
    reply.raw.once('close', () => {
      if (!answerFinished(reply.raw)) report(request, reply, true, performance.now() - started);
    });
    void sendError(reply, refusalOf(error, request), shapeOf(request));
  };
}

function refusalOf(error: FastifyError, request: FastifyRequest): GatewayError {
  switch (error.code) {
    case 'FST_ERR_BAD_URL':
      return new GatewayError(
        'InvalidParameter',
        'path: a percent-escape does not decode to UTF-8',
      );
    case 'FST_ERR_MAX_PARAM_LENGTH':
      // No task id, image file name or model id is this long.
      return new GatewayError(
        'NotFound',
        `no route: a path segment is longer than ${MAX_PATH_PARAMETER_CHARACTERS} characters`,
      );
    default:
      return gatewayErrorOf(error, request);
  }
}

function errorShapeByPath(routePrefix: string): (request: FastifyRequest) => ErrorShape {
  const roots = openAiRoots(routePrefix);
  return (request) => {
    const path = pathOf(request);
    return roots.some((root) => path === root || path.startsWith(`${root}/`))
      ? OPENAI_ERROR_SHAPE
      : GATEWAY_ERROR_SHAPE;
  };
}

function pathOf(request: FastifyRequest): string {
  return request.url.split('?')[0] ?? '';
}
