import { Type } from '@sinclair/typebox';
import { MODEL_A, MODEL_B, MODEL_IDS } from '../domain/models.js';
import { CHANNEL_TYPES, type ChannelType, DASHSCOPE_MODES } from './channel-config.js';

/**
 * JSON Schemas of one entry of the config file's `channels` list, one per channel type. Field
 * names are the file's. Rules that relate fields to each other or to the environment (one key
 * source, the variable it names being set, poll bounds, unique names) are in `read-channels.ts`.
 *
 * `x-error` gives the message shown when a field breaks the keyword it names. The order of the
 * fields is the order an entry's problems are listed in.
 */

export const HTTP_BASE_URL_FORMAT = 'http-base-url';

/** `http(s)://host[:port][/path]`, without credentials, query or fragment. */
export function isHttpBaseUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return (
      (url.protocol === 'https:' || url.protocol === 'http:') &&
      url.username === '' &&
      url.password === '' &&
      url.search === '' &&
      url.hash === ''
    );
  } catch {
    return false;
  }
}

/** `<width>x<height>`, as OpenAI names its sizes. */
export const OPENAI_SIZE = /^([1-9][0-9]{0,4})x([1-9][0-9]{0,4})$/;

function sameMessage(keywords: readonly string[], message: string): Record<string, string> {
  return Object.fromEntries(keywords.map((keyword) => [keyword, message]));
}

function integer(minimum: number, maximum: number) {
  return Type.Optional(
    Type.Integer({
      minimum,
      maximum,
      'x-error': {
        type: 'must be an integer',
        ...sameMessage(['minimum', 'maximum'], `must be between ${minimum} and ${maximum}`),
      },
    }),
  );
}

function flag() {
  return Type.Optional(Type.Boolean({ 'x-error': { type: 'must be true or false' } }));
}

function oneOf<const T extends string>(values: readonly T[]) {
  return Type.Unsafe<T>({
    enum: [...values],
    'x-error': { enum: `must be one of ${values.join(', ')}` },
  });
}

function patterned(pattern: RegExp, message: string) {
  return Type.String({
    pattern: pattern.source,
    'x-error': sameMessage(['type', 'pattern'], message),
  });
}

const upstreamModelName = patterned(/\S/, 'must be the upstream model name');

/** Our model id -> the upstream's model name. */
const ModelMap = Type.Object(
  {
    [MODEL_A]: Type.Optional(upstreamModelName),
    [MODEL_B]: Type.Optional(upstreamModelName),
  },
  {
    additionalProperties: false,
    minProperties: 1,
    'x-error': {
      type: `must map model ids (${MODEL_IDS.join(', ')}) to upstream names`,
      minProperties: 'must name at least one model',
      additionalProperties: `is an unknown model; known: ${MODEL_IDS.join(', ')}`,
    },
  },
);

const COMMON_FIELDS = {
  name: patterned(
    /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/,
    'must be a name of letters, digits, ".", "_" or "-"',
  ),
  priority: integer(0, 1000),
  weight: integer(1, 10_000),
  timeout_ms: integer(100, 3_600_000),
  breaker_threshold: integer(1, 1000),
  breaker_cooldown_ms: integer(100, 3_600_000),
};

const KEY_FIELDS = {
  api_key_env: Type.Optional(
    patterned(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be the name of an environment variable'),
  ),
  api_key: Type.Optional(patterned(/\S/, 'must be a non-empty string')),
};

const BASE_URL_MESSAGE = 'must be an http(s) URL without credentials, query or fragment';
const baseUrl = Type.String({
  format: HTTP_BASE_URL_FORMAT,
  'x-error': sameMessage(['type', 'format'], BASE_URL_MESSAGE),
});

function unknownSettingFor(type: ChannelType) {
  return { additionalProperties: `is an unknown setting for ${type} channels` };
}

export const DashScopeEntry = Type.Object(
  {
    type: Type.Literal('dashscope'),
    ...COMMON_FIELDS,
    ...KEY_FIELDS,
    poll_interval_ms: integer(20, 60_000),
    poll_max_interval_ms: integer(20, 300_000),
    base_url: baseUrl,
    models: Type.Optional(ModelMap),
    mode: Type.Optional(oneOf(DASHSCOPE_MODES)),
    pass_through_urls: flag(),
  },
  { additionalProperties: false, 'x-error': unknownSettingFor('dashscope') },
);

export const OpenAiEntry = Type.Object(
  {
    type: Type.Literal('openai'),
    ...COMMON_FIELDS,
    ...KEY_FIELDS,
    base_url: baseUrl,
    models: ModelMap,
    pass_through_urls: flag(),
    sizes: Type.Optional(
      Type.Array(patterned(OPENAI_SIZE, 'must be of the form <width>x<height>'), {
        minItems: 1,
        'x-error': sameMessage(
          ['type', 'minItems'],
          'must be a non-empty list such as [1024x1024, 1536x1024]',
        ),
      }),
    ),
    max_input_images: integer(1, 16),
    send_response_format: flag(),
  },
  { additionalProperties: false, 'x-error': unknownSettingFor('openai') },
);

export const LocalEntry = Type.Object(
  {
    type: Type.Literal('local'),
    ...COMMON_FIELDS,
    models: Type.Optional(ModelMap),
  },
  { additionalProperties: false, 'x-error': unknownSettingFor('local') },
);

/**
 * An entry whose type is missing or unknown: its other fields are still checked, so that every
 * problem is reported at once, but which fields it may have depends on the type it lacks.
 */
export const UntypedEntry = Type.Object(
  { type: oneOf(CHANNEL_TYPES), ...COMMON_FIELDS },
  { 'x-error': { type: 'must be a mapping' } },
);
