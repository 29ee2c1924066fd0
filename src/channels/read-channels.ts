import type { PixelSize } from '../domain/generation-request.js';
import { isModelId, MODEL_IDS } from '../domain/models.js';
import { ApiKey } from '../domain/api-key.js';
import {
  CHANNEL_DEFAULTS,
  CHANNEL_TYPES,
  type ChannelConfig,
  type ChannelType,
  DASHSCOPE_MODES,
  type DashScopeMode,
  DEFAULT_DASHSCOPE_MODELS,
  DEFAULT_LOCAL_CHANNEL,
  DEFAULT_OPENAI_SIZES,
  type ModelMap,
} from './channel-config.js';

type Environment = Readonly<Record<string, string | undefined>>;

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const OPENAI_SIZE = /^([1-9][0-9]{0,4})x([1-9][0-9]{0,4})$/;

const COMMON_KEYS = [
  'name',
  'type',
  'models',
  'priority',
  'weight',
  'timeout_ms',
  'breaker_threshold',
  'breaker_cooldown_ms',
] as const;
const KEYS_BY_TYPE: Record<ChannelType, readonly string[]> = {
  dashscope: [
    ...COMMON_KEYS,
    'base_url',
    'api_key',
    'api_key_env',
    'mode',
    'pass_through_urls',
    'poll_interval_ms',
    'poll_max_interval_ms',
  ],
  openai: [
    ...COMMON_KEYS,
    'base_url',
    'api_key',
    'api_key_env',
    'pass_through_urls',
    'sizes',
    'max_input_images',
    'send_response_format',
  ],
  local: COMMON_KEYS,
};

/**
 * Reads the `channels` list of the config file into channel configurations, resolving keys named
 * by `api_key_env` from `env`. Every problem is pushed onto `problems`, prefixed by `source` and
 * the entry's path (`config.yaml: channels[1].base_url must be ...`); key values never appear in
 * them. No list, or an empty one, gives the built-in local channel.
 */
export function readChannels(
  raw: unknown,
  env: Environment,
  source: string,
  problems: string[],
): ChannelConfig[] {
  if (raw === undefined || raw === null) return [DEFAULT_LOCAL_CHANNEL];
  if (!Array.isArray(raw)) {
    problems.push(`${source} must be a list of channels`);
    return [];
  }
  if (raw.length === 0) return [DEFAULT_LOCAL_CHANNEL];
  const channels: ChannelConfig[] = [];
  const seen = new Set<string>();
  raw.forEach((entry: unknown, index) => {
    const channel = readChannel(entry, env, `${source}[${index}]`, problems);
    if (channel === undefined) return;
    if (seen.has(channel.name)) {
      problems.push(`${source}[${index}].name "${channel.name}" is used by another channel`);
      return;
    }
    seen.add(channel.name);
    channels.push(channel);
  });
  return channels;
}

function readChannel(
  entry: unknown,
  env: Environment,
  path: string,
  problems: string[],
): ChannelConfig | undefined {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
    problems.push(`${path} must be a mapping`);
    return undefined;
  }
  const fields = new FieldReader(entry as Record<string, unknown>, path, problems);
  const before = problems.length;
  const type = fields.choice('type', CHANNEL_TYPES, undefined);
  const name = fields.string('name', NAME, 'a name of letters, digits, ".", "_" or "-"');
  if (type !== undefined) fields.rejectUnknown(KEYS_BY_TYPE[type]);
  const common = {
    name: name ?? '',
    priority: fields.integer('priority', 0, 1000, CHANNEL_DEFAULTS.priority),
    weight: fields.integer('weight', 1, 10_000, CHANNEL_DEFAULTS.weight),
    timeoutMs: fields.integer('timeout_ms', 100, 3_600_000, CHANNEL_DEFAULTS.timeoutMs),
    breaker: {
      failureThreshold: fields.integer(
        'breaker_threshold',
        1,
        1000,
        CHANNEL_DEFAULTS.breakerFailureThreshold,
      ),
      cooldownMs: fields.integer(
        'breaker_cooldown_ms',
        100,
        3_600_000,
        CHANNEL_DEFAULTS.breakerCooldownMs,
      ),
    },
  };

  let channel: ChannelConfig | undefined;
  switch (type) {
    case 'dashscope': {
      const apiKey = fields.apiKey(env, true);
      const poll = {
        initialMs: fields.integer('poll_interval_ms', 20, 60_000, CHANNEL_DEFAULTS.pollInitialMs),
        maxMs: fields.integer('poll_max_interval_ms', 20, 300_000, CHANNEL_DEFAULTS.pollMaxMs),
      };
      if (poll.maxMs < poll.initialMs)
        problems.push(`${path}.poll_max_interval_ms must not be less than poll_interval_ms`);
      channel = {
        ...common,
        type,
        baseUrl: fields.baseUrl() ?? '',
        apiKey: apiKey ?? new ApiKey(''),
        models: fields.models(DEFAULT_DASHSCOPE_MODELS),
        mode: fields.choice<DashScopeMode>('mode', DASHSCOPE_MODES, 'sync') ?? 'sync',
        passThroughUrls: fields.boolean('pass_through_urls', false),
        poll,
      };
      break;
    }
    case 'openai':
      channel = {
        ...common,
        type,
        baseUrl: stripVersionSuffix(fields.baseUrl() ?? ''),
        apiKey: fields.apiKey(env, false),
        models: fields.models(undefined),
        passThroughUrls: fields.boolean('pass_through_urls', false),
        sizes: fields.openAiSizes(),
        maxInputImages: fields.integer(
          'max_input_images',
          1,
          16,
          CHANNEL_DEFAULTS.openAiMaxInputImages,
        ),
        sendResponseFormat: fields.boolean('send_response_format', true),
      };
      break;
    case 'local':
      channel = { ...common, type, models: fields.models(DEFAULT_LOCAL_CHANNEL.models) };
      break;
    default:
      break;
  }
  return problems.length === before ? channel : undefined;
}

/** An OpenAI-style base URL may end in /v1; the adapter adds the version itself. */
function stripVersionSuffix(url: string): string {
  return url.replace(/\/v1$/, '');
}

class FieldReader {
  constructor(
    private readonly entry: Record<string, unknown>,
    private readonly path: string,
    private readonly problems: string[],
  ) {}

  private value(key: string): unknown {
    const value = this.entry[key];
    return value === null ? undefined : value;
  }

  private problem(key: string, text: string): undefined {
    this.problems.push(`${this.path}.${key} ${text}`);
    return undefined;
  }

  rejectUnknown(allowed: readonly string[]): void {
    for (const key of Object.keys(this.entry)) {
      if (!allowed.includes(key))
        this.problems.push(`${this.path}: unknown setting "${key}" for this channel type`);
    }
  }

  string(key: string, pattern: RegExp, shape: string): string | undefined {
    const value = this.value(key);
    if (value === undefined) return this.problem(key, 'is required');
    if (typeof value !== 'string' || !pattern.test(value))
      return this.problem(key, `must be ${shape}`);
    return value;
  }

  choice<T extends string>(
    key: string,
    values: readonly T[],
    fallback: T | undefined,
  ): T | undefined {
    const value = this.value(key);
    if (value === undefined)
      return fallback === undefined ? this.problem(key, 'is required') : fallback;
    if (typeof value === 'string' && (values as readonly string[]).includes(value))
      return value as T;
    return this.problem(key, `must be one of ${values.join(', ')}`);
  }

  integer(key: string, min: number, max: number, fallback: number): number {
    const value = this.value(key);
    if (value === undefined) return fallback;
    if (typeof value !== 'number' || !Number.isSafeInteger(value))
      return this.problem(key, 'must be an integer') ?? fallback;
    if (value < min || value > max)
      return this.problem(key, `must be between ${min} and ${max}`) ?? fallback;
    return value;
  }

  boolean(key: string, fallback: boolean): boolean {
    const value = this.value(key);
    if (value === undefined) return fallback;
    if (typeof value !== 'boolean') return this.problem(key, 'must be true or false') ?? fallback;
    return value;
  }

  baseUrl(): string | undefined {
    const value = this.value('base_url');
    if (value === undefined) return this.problem('base_url', 'is required');
    if (typeof value === 'string') {
      try {
        const url = new URL(value);
        if (
          (url.protocol === 'https:' || url.protocol === 'http:') &&
          url.username === '' &&
          url.password === '' &&
          url.search === '' &&
          url.hash === ''
        )
          return `${url.origin}${url.pathname}`.replace(/\/+$/, '');
      } catch {
        // reported below
      }
    }
    return this.problem(
      'base_url',
      'must be an http(s) URL without credentials, query or fragment',
    );
  }

  /** `api_key_env` names an environment variable; `api_key` holds the key itself. */
  apiKey(env: Environment, required: boolean): ApiKey | undefined {
    const fromEnv = this.value('api_key_env');
    const inline = this.value('api_key');
    if (fromEnv !== undefined && inline !== undefined)
      return this.problem('api_key', 'and api_key_env are both set; use one');
    if (fromEnv !== undefined) {
      if (typeof fromEnv !== 'string' || !ENV_NAME.test(fromEnv))
        return this.problem('api_key_env', 'must be the name of an environment variable');
      const value = env[fromEnv];
      if (value === undefined || value.trim() === '')
        return this.problem('api_key_env', `names ${fromEnv}, which is not set`);
      return new ApiKey(value.trim());
    }
    if (inline !== undefined) {
      if (typeof inline !== 'string' || inline.trim() === '')
        return this.problem('api_key', 'must be a non-empty string');
      return new ApiKey(inline.trim());
    }
    return required ? this.problem('api_key_env', 'or api_key is required') : undefined;
  }

  models(fallback: Readonly<ModelMap> | undefined): ModelMap {
    const value = this.value('models');
    if (value === undefined)
      return fallback === undefined
        ? (this.problem('models', 'is required') ?? {})
        : { ...fallback };
    if (typeof value !== 'object' || Array.isArray(value))
      return (
        this.problem('models', `must map model ids (${MODEL_IDS.join(', ')}) to upstream names`) ??
        {}
      );
    const entries = Object.entries(value as Record<string, unknown>);
    const models: ModelMap = {};
    for (const [model, upstream] of entries) {
      if (!isModelId(model)) {
        this.problem('models', `has unknown model "${model}"; known: ${MODEL_IDS.join(', ')}`);
      } else if (typeof upstream !== 'string' || upstream.trim() === '') {
        this.problem(`models.${model}`, 'must be the upstream model name');
      } else {
        models[model] = upstream.trim();
      }
    }
    if (entries.length === 0) this.problem('models', 'must name at least one model');
    return models;
  }

  openAiSizes(): PixelSize[] {
    const value = this.value('sizes');
    if (value === undefined) return DEFAULT_OPENAI_SIZES.map((size) => ({ ...size }));
    if (!Array.isArray(value) || value.length === 0)
      return this.problem('sizes', 'must be a non-empty list such as [1024x1024, 1536x1024]') ?? [];
    const sizes: PixelSize[] = [];
    value.forEach((item: unknown, index) => {
      const match = typeof item === 'string' ? OPENAI_SIZE.exec(item) : null;
      if (match === null) {
        this.problem(`sizes[${index}]`, 'must be of the form <width>x<height>');
        return;
      }
      sizes.push({ width: Number(match[1]), height: Number(match[2]) });
    });
    return sizes;
  }
}
