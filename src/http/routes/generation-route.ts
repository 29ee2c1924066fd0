import type { FastifyInstance } from 'fastify';
import { generationPaths } from '../../domain/api-paths.js';
import { maxImagesOf } from '../../domain/generation-request.js';
import { CallerGone } from '../../errors/caller-gone.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { GenerationService } from '../../generation/generation-service.js';
import { shapeResponse } from '../../generation/response-shape.js';
import { validateRequest } from '../../validate/validate-request.js';
import { principalOf } from '../authentication-hook.js';
import { accountOf } from '../ledger-hooks.js';

export interface GenerationRouteOptions {
  routePrefix: string;
  maxBodyBytes: number;
  generation: GenerationService;
}

const OTHER_METHODS = ['GET', 'HEAD', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'] as const;

/** The DashScope synchronous endpoint; `scope` is an accounted scope (authenticated, billed). */
export function registerGenerationRoute(
  scope: FastifyInstance,
  options: GenerationRouteOptions,
): void {
  for (const url of generationPaths(options.routePrefix)) {
    scope.route({
      method: 'POST',
      url,
      bodyLimit: options.maxBodyBytes,
      handler: async (request, reply) => {
        const account = accountOf(request);
        const generationRequest = validateRequest(request.body);
        if (generationRequest.prompt.truncated) reply.header('x-prompt-truncated', 'true');
        const replay = request.idempotentReplay;
        if (replay !== undefined) {
          account.replayOf(generationRequest, maxImagesOf(generationRequest), replay.result);
          return shapeResponse(generationRequest, replay.result, replay.requestId);
        }
        const abort = new AbortController();
        // The response's close, not the request's: the request closes as soon as its body is read.
        const onClose = () => {
          if (!reply.raw.writableFinished) abort.abort(new CallerGone());
        };
        reply.raw.once('close', onClose);
        try {
          const result = await account.track(
            options.generation.generate(generationRequest, {
              requestId: request.id,
              principal: principalOf(request),
              signal: abort.signal,
              account,
            }),
          );
          return shapeResponse(generationRequest, result, request.id);
        } finally {
          reply.raw.off('close', onClose);
        }
      },
    });
  }
}

/** The generation paths answer 405 to every other method, without authentication. */
export function registerGenerationMethodGuard(app: FastifyInstance, routePrefix: string): void {
  for (const url of generationPaths(routePrefix)) {
    app.route({
      method: [...OTHER_METHODS],
      url,
      handler: async (_request, reply) => {
        reply.header('allow', 'POST');
        throw new GatewayError('MethodNotAllowed', 'this endpoint accepts POST only');
      },
    });
  }
}
