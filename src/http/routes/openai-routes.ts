import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ModelAccess } from '../../admission/admission.js';
import { openAiRoots } from '../../domain/api-paths.js';
import type { ModelAliases } from '../../domain/model-aliases.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { DEFAULT_MAX_IMAGE_BYTES } from '../../inputs/image-limits.js';
import { readEditForm } from '../../openai/edit-form.js';
import { modelEntry, modelIdsFor, modelList } from '../../openai/models-list.js';
import { readOpenAiForm } from '../../openai/multipart-reader.js';
import { openAiErrorBody, openAiErrorHeaders } from '../../openai/openai-error.js';
import { readOpenAiImageRequest } from '../../openai/openai-image-request.js';
import { fieldError } from '../../openai/openai-terms.js';
import { UploadedForm } from '../../openai/uploaded-form.js';
import { MODEL_A_MAX_IMAGES } from '../../validate/model-a-rules.js';
import type { Authenticator } from '../../auth/authenticator.js';
import { addAuthenticationHooks, principalOf } from '../hooks/authentication.js';
import { type ErrorShape, gatewayErrorOf, sendError } from '../error-reply.js';
import { openAiAnswer, type OpenAiAnswerOptions } from './openai-answers.js';
import { echoQuoted } from '../../errors/echo.js';

/** docs/openai.md: OpenAI's error body, and `x-should-retry` where a retry cannot help. */
export const OPENAI_ERROR_SHAPE: ErrorShape = {
  body: openAiErrorBody,
  headers: openAiErrorHeaders,
};

/** Text fields of an edit: prompt, options and extras, never near this many or this long. */
const MAX_FORM_FIELDS = 32;
const MAX_FORM_FIELD_BYTES = 1024 * 1024;

export interface OpenAiImageRouteOptions extends OpenAiAnswerOptions {
  routePrefix: string;
  maxBodyBytes: number;
  modelAliases: ModelAliases;
}

/** The model a request names, in its JSON body or its edit form: a refused one's row names it. */
export function openAiModelNamedBy(request: FastifyRequest): unknown {
  const body = request.body;
  if (body instanceof UploadedForm) return body.valueOf('model');
  return (body as { model?: unknown } | null | undefined)?.model;
}

/**
 * `POST /v1/images/generations` (JSON) and `POST /v1/images/edits` (multipart), under the route
 * prefix and bare; `scope` is an accounted scope whose errors take OpenAI's shape. Requests are
 * translated into the shared GenerationRequest and answered in OpenAI's shape (docs/openai.md).
 */
export function registerOpenAiImageRoutes(
  scope: FastifyInstance,
  options: OpenAiImageRouteOptions,
): void {
  const answer = openAiAnswer(options);
  for (const root of openAiRoots(options.routePrefix)) {
    scope.post(
      `${root}/images/generations`,
      { bodyLimit: options.maxBodyBytes },
      (request, reply) =>
        answer(
          request,
          reply,
          readOpenAiImageRequest(request.body, 'generations', options.modelAliases),
        ),
    );
  }

  void scope.register(async (edits) => {
    edits.removeAllContentTypeParsers();
    edits.addContentTypeParser(
      'multipart/form-data',
      async (request: FastifyRequest, payload: IncomingMessage) => {
        const declared = Number(request.headers['content-length']);
        if (Number.isFinite(declared) && declared > options.maxBodyBytes)
          throw new GatewayError(
            'RequestTooLarge',
            'request body is larger than the configured limit',
          );
        return readOpenAiForm(
          payload,
          request.headers,
          {
            maxFileBytes: DEFAULT_MAX_IMAGE_BYTES,
            maxFiles: MODEL_A_MAX_IMAGES,
            maxFieldBytes: MAX_FORM_FIELD_BYTES,
            maxFields: MAX_FORM_FIELDS,
          },
          request.headers['idempotency-key'] !== undefined,
        );
      },
    );
    edits.addContentTypeParser('*', async () => {
      throw fieldError('body', 'Content-Type must be multipart/form-data');
    });
    for (const root of openAiRoots(options.routePrefix)) {
      edits.post(`${root}/images/edits`, (request, reply) => {
        const form = request.body;
        if (!(form instanceof UploadedForm))
          throw new GatewayError(
            'InvalidParameter',
            'body: Content-Type must be multipart/form-data',
          );
        const { body, uploads } = readEditForm(form);
        return answer(
          request,
          reply,
          readOpenAiImageRequest(body, 'edits', options.modelAliases, uploads),
        );
      });
    }
  });
}

export interface OpenAiModelRouteOptions {
  routePrefix: string;
  authenticator: Authenticator;
  /** Which models each token may use; without it, every model is listed to everyone. */
  modelAccess?: ModelAccess | undefined;
  modelAliases: ModelAliases;
}

/** `GET /v1/models` and `GET /v1/models/{id}`: the models the caller's token may use. */
export function registerOpenAiModelRoutes(
  app: FastifyInstance,
  options: OpenAiModelRouteOptions,
): void {
  void app.register(async (scope) => {
    addAuthenticationHooks(scope, options.authenticator);
    scope.setErrorHandler((error, request, reply) =>
      sendError(reply, gatewayErrorOf(error, request), OPENAI_ERROR_SHAPE),
    );
    const idsFor = async (request: FastifyRequest) =>
      modelIdsFor(
        await options.modelAccess?.allowedModels(principalOf(request)),
        options.modelAliases,
      );
    for (const root of openAiRoots(options.routePrefix)) {
      scope.get(`${root}/models`, async (request) => modelList(await idsFor(request)));
      scope.get<{ Params: { id: string } }>(`${root}/models/:id`, async (request) => {
        const { id } = request.params;
        if (!(await idsFor(request)).includes(id))
          throw new GatewayError(
            'NotFound',
            `model ${echoQuoted(id)} does not exist or this token may not use it`,
          );
        return modelEntry(id);
      });
    }
  });
}
