import { OPENAI_ROOT } from '../domain/api-paths.js';
import type { ModelAliases } from '../domain/model-aliases.js';
import { MODEL_IDS } from '../domain/models.js';
import { EXTRA_FIELDS, OPTION_RULES } from '../openai/openai-fields.js';
import { DEFAULT_RESPONSE_FORMAT, type ImageRoute } from '../openai/openai-image-request.js';

const OpenAiError = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['message', 'type', 'param', 'code'],
      properties: {
        message: { type: 'string', description: 'Names the OpenAI field at fault first.' },
        type: { type: 'string' },
        param: { type: ['string', 'null'] },
        code: { type: 'string', description: 'A code of the error table.' },
      },
    },
  },
};

/** The request fields of an image route; `model` takes the ids and the configured aliases. */
const imageFields = (aliases: ModelAliases, route: ImageRoute) => ({
  model: { type: 'string', enum: [...MODEL_IDS, ...aliases.keys()] },
  prompt: { type: 'string' },
  n: { type: 'integer', minimum: 1 },
  size: { type: 'string', description: 'auto, WIDTHxHEIGHT, or 1K/2K/4K (gen-2.7-image-pro).' },
  response_format: {
    type: 'string',
    enum: ['url', 'b64_json'],
    default: DEFAULT_RESPONSE_FORMAT[route],
  },
  user: { type: 'string' },
  ...Object.fromEntries(
    Object.entries(OPTION_RULES).map(([name, rule]) => [
      name,
      { enum: rule.accepted, description: `Other values are refused: ${rule.why}.` },
    ]),
  ),
  ...Object.fromEntries(
    EXTRA_FIELDS.map((name) => [name, { description: 'The parameter of docs/api.md §3-§4.' }]),
  ),
});

const ImagesResponse = {
  type: 'object',
  properties: {
    created: { type: 'integer' },
    size: { type: 'string' },
    output_format: { const: 'png' },
    data: {
      type: 'array',
      items: {
        type: 'object',
        properties: { url: { type: 'string', format: 'uri' }, b64_json: { type: 'string' } },
      },
    },
    usage: { type: 'object' },
  },
};

function answers(ok: object) {
  return {
    '200': { description: 'Success', content: { 'application/json': { schema: ok } } },
    default: {
      description: 'An error in OpenAI shape; statuses as in docs/errors.md.',
      content: { 'application/json': { schema: OpenAiError } },
    },
  };
}

const ModelEntry = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    object: { const: 'model' },
    created: { type: 'integer' },
    owned_by: { type: 'string' },
  },
};

/** The OpenAI-compatible routes (docs/openai.md), under the route prefix. */
export function openAiPaths(routePrefix: string, aliases: ModelAliases): Record<string, object> {
  const root = `${routePrefix}${OPENAI_ROOT}`;
  return {
    [`${root}/images/generations`]: {
      post: {
        operationId: 'openaiImagesGenerate',
        summary: 'OpenAI-compatible image generation',
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: {
                type: 'object',
                required: ['model', 'prompt'],
                properties: imageFields(aliases, 'generations'),
              },
            },
          },
        },
        responses: answers(ImagesResponse),
      },
    },
    [`${root}/images/edits`]: {
      post: {
        operationId: 'openaiImagesEdit',
        summary: 'OpenAI-compatible image edit; image files as image or image[]',
        requestBody: {
          required: true,
          content: {
            'multipart/form-data': {
              schema: {
                type: 'object',
                required: ['model', 'prompt', 'image'],
                properties: {
                  ...imageFields(aliases, 'edits'),
                  image: {
                    type: 'array',
                    items: { type: 'string', contentMediaType: 'application/octet-stream' },
                  },
                },
              },
            },
          },
        },
        responses: answers(ImagesResponse),
      },
    },
    [`${root}/models`]: {
      get: {
        operationId: 'openaiModelsList',
        responses: answers({
          type: 'object',
          properties: { object: { const: 'list' }, data: { type: 'array', items: ModelEntry } },
        }),
      },
    },
    [`${root}/models/{id}`]: {
      get: {
        operationId: 'openaiModelsRetrieve',
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
        responses: answers(ModelEntry),
      },
    },
  };
}
