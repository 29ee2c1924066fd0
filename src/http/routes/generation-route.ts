import type { FastifyInstance } from 'fastify';
import type { Authenticator } from '../../auth/authenticator.js';
import type { Principal } from '../../domain/principal.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { maxImagesOf } from '../../domain/generation-request.js';
import type { GenerationService } from '../../generation/generation-service.js';
import { shapeResponse } from '../../generation/response-shape.js';
import { validateRequest } from '../../validate/validate-request.js';
import { generationPaths } from '../../domain/api-paths.js';

export interface GenerationRouteOptions {
  routePrefix: string;
  maxBodyBytes: number;
  authenticator: Authenticator;
  generation: GenerationService;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | undefined;
  }
}

const OTHER_METHODS = ['GET', 'HEAD', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'] as const;

export function registerGenerationRoute(
  app: FastifyInstance,
  options: GenerationRouteOptions,
): void {
  app.decorateRequest('principal', undefined);
  for (const url of generationPaths(options.routePrefix)) {
    app.route({
      method: 'POST',
      url,
      bodyLimit: options.maxBodyBytes,
      // Runs before the body is read: an unauthenticated caller never costs us its upload.
      onRequest: async (request) => {
        request.principal = await options.authenticator.verifyAuthorization(
          request.headers.authorization,
        );
      },
      handler: async (request, reply) => {
        const generationRequest = validateRequest(request.body);
        request.usage?.describe(generationRequest, maxImagesOf(generationRequest));
        if (generationRequest.prompt.truncated) reply.header('x-prompt-truncated', 'true');
        const abort = new AbortController();
        // The response's close, not the request's: the request closes as soon as its body is read.
        const onClose = () => {
          if (!reply.raw.writableFinished) abort.abort(new Error('caller disconnected'));
        };
        reply.raw.once('close', onClose);
        try {
          const result = await options.generation.generate(generationRequest, {
            requestId: request.id,
            principal: request.principal as Principal,
            signal: abort.signal,
            usage: request.usage,
          });
          return shapeResponse(generationRequest, result, request.id);
        } finally {
          reply.raw.off('close', onClose);
        }
      },
    });
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
