import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { openAiRoots } from '../domain/api-paths.js';
import { GATEWAY_ERROR_SHAPE, gatewayErrorOf, sendError } from './error-reply.js';
import { OPENAI_ERROR_SHAPE } from './routes/openai-routes.js';

/**
 * Answers Fastify's refusals of a URL made before any route or hook runs (a percent-escape that
 * does not decode, a path parameter over the routing limit) in our error shape, the OpenAI shape
 * under its roots, with the request id as every other answer has it.
 */
export function frameworkErrorHandler(routePrefix: string) {
  const roots = openAiRoots(routePrefix);
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void => {
    const path = request.url.split('?')[0] ?? '';
    const shape = roots.some((root) => path === root || path.startsWith(`${root}/`))
      ? OPENAI_ERROR_SHAPE
      : GATEWAY_ERROR_SHAPE;
    reply.header('x-request-id', request.id);
    void sendError(reply, gatewayErrorOf(error, request), shape);
  };
}
