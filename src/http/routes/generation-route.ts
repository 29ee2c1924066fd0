import type { FastifyInstance, FastifyRequest } from 'fastify';
import { DASHSCOPE_FRONT_DOOR, DASHSCOPE_TASK_FRONT_DOOR } from '../../domain/front-door.js';
import { allGenerationPaths } from '../../domain/api-paths.js';
import type { ModelAliases } from '../../domain/model-aliases.js';
import { GatewayError } from '../../errors/gateway-error.js';
import type { GenerationService } from '../../generation/generation-service.js';
import { shapeResponse } from '../../generation/response-shape.js';
import type { TaskService } from '../../tasks/task-service.js';
import {
  imageEventOf,
  settledEventsOf,
  streamsIncrementally,
} from '../../generation/stream-events.js';
import { validateRequest } from '../../validate/validate-request.js';
import { wantsTask } from '../async-header.js';
import { EventStreamReply, wantsEventStream } from '../event-stream-reply.js';
import type { LevelGauge } from '../../metrics/level-gauge.js';
import { readJsonBodiesOnce } from '../json-body.js';
import type { PublicOrigins } from '../public-origins.js';
import { runGeneration } from '../run-generation.js';
import { submitTask } from './task-submission.js';
import { resolvesUploads } from '../upload-headers.js';

export interface GenerationRouteOptions {
  routePrefix: string;
  maxBodyBytes: number;
  generation: GenerationService;
  modelAliases: ModelAliases;
  /** Asynchronous tasks; without it `X-DashScope-Async` is not looked at. */
  tasks?: TaskService | undefined;
  /** How long a started event stream may stay silent before a keep-alive comment. */
  keepAliveMs: number;
  /** What the answers' image URLs name. */
  origins: PublicOrigins;
  /** Event streams open now, for GET /metrics; absent in tests of the bare HTTP layer. */
  openEventStreams?: LevelGauge | undefined;
}

const OTHER_METHODS = ['GET', 'HEAD', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'] as const;

/**
 * The DashScope generation endpoints, synchronous, or a task submission with
 * `X-DashScope-Async: enable`; `scope` is an accounted scope (authenticated, billed).
 */
export function registerGenerationRoute(
  scope: FastifyInstance,
  options: GenerationRouteOptions,
): void {
  const tasks = options.tasks;
  readJsonBodiesOnce(scope);
  for (const url of allGenerationPaths(options.routePrefix)) {
    scope.route({
      method: 'POST',
      url,
      bodyLimit: options.maxBodyBytes,
      handler: async (request, reply) => {
        const generationRequest = validateRequest(request.body, options.modelAliases);
        if (tasks !== undefined && wantsTask(request.headers)) {
          if (generationRequest.prompt.truncated) reply.header('x-prompt-truncated', 'true');
          return submitTask(tasks, request, reply, generationRequest);
        }
        const stream = wantsEventStream(request.headers, generationRequest)
          ? new EventStreamReply(reply, options.keepAliveMs, options.openEventStreams)
          : undefined;
        const incremental = stream !== undefined && streamsIncrementally(generationRequest);
        let streamed = 0;
        try {
          const { result, requestId } = await runGeneration(
            request,
            reply,
            options.generation,
            generationRequest,
            {
              origins: options.origins,
              resolveUploads: resolvesUploads(request.headers),
              // Each image is billed once it reached the caller's connection, never before.
              ...(incremental
                ? {
                    handOver: (url: string) => {
                      streamed++;
                      return stream.handOver(imageEventOf(url, request.id));
                    },
                  }
                : {}),
            },
          );
          // A replay (Idempotency-Key) streams the first result's images now, all billed.
          if (incremental)
            for (const url of result.imageUrls.slice(streamed))
              stream.send(imageEventOf(url, requestId));
          // Otherwise settled before the first event: a streamed image is never an unbilled one.
          if (stream !== undefined)
            return stream.finish(settledEventsOf(generationRequest, result, requestId));
          return shapeResponse(generationRequest, result, requestId);
        } catch (error) {
          if (stream?.started === true) return stream.fail(error);
          throw error;
        } finally {
          stream?.stopKeepAlive();
        }
      },
    });
  }
}

/** A DashScope request is run as a task when it asks to be: its ledger row names that door. */
export function dashScopeFrontDoorOf(request: FastifyRequest): string {
  return wantsTask(request.headers) ? DASHSCOPE_TASK_FRONT_DOOR : DASHSCOPE_FRONT_DOOR;
}

/** The generation paths answer 405 to every other method, without authentication. */
export function registerGenerationMethodGuard(app: FastifyInstance, routePrefix: string): void {
  for (const url of allGenerationPaths(routePrefix)) {
    app.route({
      method: [...OTHER_METHODS],
      url,
      // Refused before the body is read: a body sent with the wrong method is never parsed.
      onRequest: async (_request, reply) => {
        reply.header('allow', 'POST');
        throw new GatewayError('MethodNotAllowed', 'this endpoint accepts POST only');
      },
      handler: async () => {
        throw new Error('unreachable: onRequest refuses every request');
      },
    });
  }
}
