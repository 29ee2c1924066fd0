import { ERROR_TABLE, type ErrorCode } from '../errors/error-table.js';
import { GENERATION_PATH } from '../domain/api-paths.js';
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

function errorResponses() {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const [code, { status }] of Object.entries(ERROR_TABLE) as [
    ErrorCode,
    { status: number },
  ][]) {
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

/** OpenAPI 3.1 of the endpoint, built from the very schemas the validator compiles. */
export function buildOpenApiDocument(routePrefix: string, version: string): object {
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
        ModelARequest: ModelARequestSchema,
        ModelBRequest: ModelBRequestSchema,
        ModelAResponse,
        ModelBResponse,
        Error: ErrorBody,
      },
    },
    security: [{ bearer: [] }],
    paths: {
      [`${routePrefix}${GENERATION_PATH}`]: {
        post: {
          operationId: 'generate',
          summary: 'Generate or edit images',
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema: {
                  oneOf: [
                    { $ref: '#/components/schemas/ModelARequest' },
                    { $ref: '#/components/schemas/ModelBRequest' },
                  ],
                  discriminator: { propertyName: 'model' },
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
                    ],
                  },
                },
              },
            },
            ...errorResponses(),
          },
        },
      },
    },
  };
}
