import type { TObject } from '@sinclair/typebox';
import { ERROR_TABLE, type ErrorCode } from '../errors/error-table.js';
import { GENERATION_PATH } from '../domain/api-paths.js';
import { aliasesOf, type ModelAliases } from '../domain/model-aliases.js';
import { MODEL_A, MODEL_B, type ModelId } from '../domain/models.js';
import { openAiPaths } from './openai-paths.js';
import { ASYNC_HEADER_PARAMETER, TASK_SCHEMAS, taskPaths } from './task-paths.js';
import { uploadPaths } from './upload-paths.js';
import { ADMIN_SCHEMAS, adminPaths } from './admin-paths.js';
import { usagePaths } from './usage-paths.js';
import { ModelARequestSchema, ModelBRequestSchema } from '../validate/request-schemas.js';

const ErrorBody = {
  type: 'object',
  required: ['code', 'message', 'request_id'],
  properties: {
    code: { type: 'string', enum: Object.keys(ERROR_TABLE) },
    message: {
      type: 'string',
      description: 'Names the offending field as a JSON path where there is one.',
    },
    request_id: { type: 'string' },
  },
} as const;

const imageUsageCommon = {
  image_count: { type: 'integer', description: 'Images actually produced; what is billed.' },
};

function choices(item: object) {
  return {
    type: 'array',
    items: {
      type: 'object',
      properties: {
        finish_reason: { const: 'stop' },
        message: {
          type: 'object',
          properties: { role: { const: 'assistant' }, content: { type: 'array', items: item } },
        },
      },
    },
  };
}

const ModelAResponse = {
  title: 'Response of gen-2.7-image-pro',
  type: 'object',
  properties: {
    output: {
      type: 'object',
      properties: {
        choices: choices({
          type: 'object',
          properties: {
            type: { const: 'image' },
            image: { type: 'string', format: 'uri', description: 'PNG, valid 24 hours.' },
          },
        }),
        finished: { type: 'boolean' },
      },
    },
    usage: {
      type: 'object',
      properties: {
        ...imageUsageCommon,
        size: { type: 'string', pattern: '^[0-9]+\\*[0-9]+$' },
        input_tokens: { type: 'integer' },
        output_tokens: { type: 'integer' },
        total_tokens: { type: 'integer' },
      },
    },
    request_id: { type: 'string' },
  },
};

const ModelBResponse = {
  title: 'Response of txt-image-2.0-pro',
  type: 'object',
  properties: {
    output: {
      type: 'object',
      properties: {
        choices: choices({
          type: 'object',
          properties: { image: { type: 'string', format: 'uri' } },
        }),
      },
    },
    usage: {
      type: 'object',
      properties: { ...imageUsageCommon, width: { type: 'integer' }, height: { type: 'integer' } },
    },
    request_id: { type: 'string' },
  },
};

/** The error answers by status, of every code or of `only` these. */
function errorResponses(only?: readonly ErrorCode[]) {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const [code, { status }] of Object.entries(ERROR_TABLE) as [
    ErrorCode,
    { status: number },
  ][]) {
    if (only !== undefined && !only.includes(code)) continue;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus].map(([status, codes]) => [
      String(status),
      {
        description: `Codes: ${codes.join(', ')}`,
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      },
    ]),
  );
}

/**
 * A request schema whose `model` also takes the model's aliases: the validator sees the model id
 * only, as it resolves aliases first.
 */
function acceptingAliases(schema: TObject, model: ModelId, aliases: ModelAliases) {
  const names = [model, ...aliasesOf(model, aliases)];
  return {
    ...schema,
    properties: {
      ...schema.properties,
      model: {
        type: 'string',
        enum: names,
        description:
          names.length === 1 ? 'The model id.' : `The model id, or an alias that names ${model}.`,
      },
    },
  };
}

function modelMapping(aliases: ModelAliases): Record<string, string> {
  const mapping: Record<string, string> = {};
  for (const [model, schema] of [
    [MODEL_A, '#/components/schemas/ModelARequest'],
    [MODEL_B, '#/components/schemas/ModelBRequest'],
  ] as const)
    for (const name of [model, ...aliasesOf(model, aliases)]) mapping[name] = schema;
  return mapping;
}

const WorkspaceHeader = {
  name: 'X-DashScope-WorkSpace',
  in: 'header',
  required: false,
  description:
    'A DashScope workspace id, recorded in the usage ledger. Empty counts as absent; one header only.',
  schema: { type: 'string', maxLength: 64, pattern: '^[\\x20-\\x7e]*$' },
} as const;

/** OpenAPI 3.1 of the endpoint, built from the very schemas the validator compiles. */
export function buildOpenApiDocument(
  routePrefix: string,
  version: string,
  aliases: ModelAliases,
): object {
  const generation = generationOperation(aliases);
  return {
    openapi: '3.1.0',
    info: {
      title: 'imagegate',
      version,
      description:
        'Image generation and editing. Rules that relate fields to each other are stated in the field descriptions and enforced by the gateway.',
    },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
      schemas: {
        ModelARequest: acceptingAliases(ModelARequestSchema, MODEL_A, aliases),
        ModelBRequest: acceptingAliases(ModelBRequestSchema, MODEL_B, aliases),
        ModelAResponse,
        ModelBResponse,
        Error: ErrorBody,
        ...TASK_SCHEMAS,
        ...ADMIN_SCHEMAS,
      },
    },
    security: [{ bearer: [] }],
    paths: {
      [`${routePrefix}${GENERATION_PATH}`]: { post: generation },
      ...taskPaths(routePrefix, generation, errorResponses()),
      ...openAiPaths(routePrefix, aliases),
      ...uploadPaths(routePrefix, errorResponses, aliases),
      ...adminPaths(errorResponses),
      ...usagePaths(errorResponses),
    },
  };
}

/** The generation operation: synchronous, streamed, or (with X-DashScope-Async) a task submission. */
function generationOperation(aliases: ModelAliases): object {
  return {
    operationId: 'generate',
    summary: 'Generate or edit images',
    parameters: [
      ASYNC_HEADER_PARAMETER,
      WorkspaceHeader,
      {
        name: 'X-DashScope-SSE',
        in: 'header',
        required: false,
        schema: { const: 'enable' },
        description:
          'Answer as Server-Sent Events (text/event-stream), as do Accept: text/event-stream and parameters.stream: true.',
      },
    ],
    requestBody: {
      required: true,
      content: {
        'application/json': {
          schema: {
            oneOf: [
              { $ref: '#/components/schemas/ModelARequest' },
              { $ref: '#/components/schemas/ModelBRequest' },
            ],
            discriminator: { propertyName: 'model', mapping: modelMapping(aliases) },
          },
        },
      },
    },
    responses: {
      '200': {
        description: 'Generated images, in the shape of the requested model.',
        headers: {
          'X-Request-Id': { schema: { type: 'string' } },
          'X-Prompt-Truncated': {
            schema: { const: 'true' },
            description: 'Present when the prompt was cut to 5000 code points.',
          },
        },
        content: {
          'application/json': {
            schema: {
              oneOf: [
                { $ref: '#/components/schemas/ModelAResponse' },
                { $ref: '#/components/schemas/ModelBResponse' },
                { $ref: '#/components/schemas/TaskReceipt' },
              ],
            },
          },
          'text/event-stream': {
            schema: {
              type: 'string',
              description:
                "When a stream was asked for: events of 'id:<n>', 'event:result', ':HTTP_STATUS/200' and 'data:<one line of JSON>' lines, each data a response body of the model, the last with finish_reason stop and usage; with model A's sequential mode and incremental_output, one event per image (finish_reason null) before it. A failure after the stream started is one 'event:error' with ':HTTP_STATUS/<status>', 'status:<status>' and data of the Error schema. Comment lines ':keep-alive' every 15 s.",
            },
          },
        },
      },
      ...errorResponses(),
    },
  };
}
