import type { Static } from '@sinclair/typebox';
import { ApiKey } from '../domain/api-key.js';
import type { PixelSize } from '../domain/generation-request.js';
import { isModelId } from '../domain/models.js';
import type { Checked, SchemaProblem } from '../validate/schema-check.js';
import {
  CHANNEL_DEFAULTS,
  CHANNEL_TYPES,
  type ChannelConfig,
  type ChannelType,
  type DashScopeChannelConfig,
  DEFAULT_DASHSCOPE_MODELS,
  DEFAULT_LOCAL_CHANNEL,
  DEFAULT_OPENAI_SIZES,
  type LocalChannelConfig,
  type ModelMap,
  type OpenAiChannelConfig,
} from './channel-config.js';
import { ChannelEntryCheck, type Failure } from './channel-entry-check.js';
import {
  DashScopeEntry,
  LocalEntry,
  OPENAI_SIZE,
  OpenAiEntry,
  UntypedEntry,
} from './channel-schemas.js';
import { isMapping, type Mapping } from './mapping.js';

type Environment = Readonly<Record<string, string | undefined>>;

const dashScopeEntry = new ChannelEntryCheck(DashScopeEntry);
const openAiEntry = new ChannelEntryCheck(OpenAiEntry);
const localEntry = new ChannelEntryCheck(LocalEntry);
const untypedEntry = new ChannelEntryCheck(UntypedEntry);

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
  raw.forEach((entry: unknown, index) => {
    const path = `${source}[${index}]`;
    const read = readChannel(entry, env);
    if (!read.ok) {
      for (const problem of read.problems)
        problems.push(`${problem.path === '' ? path : `${path}.${problem.path}`} ${problem.text}`);
      return;
    }
    const { name } = read.value;
    if (channels.some((channel) => channel.name === name)) {
      problems.push(`${path}.name "${name}" is used by another channel`);
      return;
    }
    channels.push(read.value);
  });
  return channels;
}

function readChannel(entry: unknown, env: Environment): Checked<ChannelConfig> {
  if (!isMapping(entry) || !isChannelType(entry.type))
    // Without a known type the entry cannot pass; its other problems are reported with the type's.
    return untypedEntry.problemsOf(entry);
  switch (entry.type) {
    case 'dashscope':
      return readDashScope(entry, env);
    case 'openai':
      return readOpenAi(entry, env);
    case 'local':
      return readLocal(entry);
  }
}

function readDashScope(entry: Mapping, env: Environment): Checked<DashScopeChannelConfig> {
  const { given, checked, sound } = dashScopeEntry.check(entry);
  const apiKey = readApiKey(given, sound, env);
  const keyMissing: SchemaProblem[] =
    apiKey.ok && apiKey.value === undefined && !hasKeyField(given)
      ? [{ path: 'api_key_env', text: 'or api_key is required' }]
      : [];
  const poll = {
    initialMs: sound.poll_interval_ms ?? CHANNEL_DEFAULTS.pollInitialMs,
    maxMs: sound.poll_max_interval_ms ?? CHANNEL_DEFAULTS.pollMaxMs,
  };
  const pollOutOfOrder: SchemaProblem[] =
    poll.maxMs < poll.initialMs
      ? [{ path: 'poll_max_interval_ms', text: 'must not be less than poll_interval_ms' }]
      : [];
  // A key field the schema refused leaves no key and is reported by the schema.
  if (!checked.ok || !apiKey.ok || apiKey.value === undefined || pollOutOfOrder.length > 0)
    return dashScopeEntry.failure(checked, apiKey, keyMissing, pollOutOfOrder);
  const fields = checked.value;
  return {
    ok: true,
    value: {
      ...commonSettings(fields),
      type: 'dashscope',
      baseUrl: baseUrlOf(fields.base_url),
      apiKey: apiKey.value,
      models: upstreamNames(fields.models ?? DEFAULT_DASHSCOPE_MODELS),
      mode: fields.mode ?? 'sync',
      passThroughUrls: fields.pass_through_urls ?? false,
      poll,
    },
  };
}

function readOpenAi(entry: Mapping, env: Environment): Checked<OpenAiChannelConfig> {
  const { given, checked, sound } = openAiEntry.check(entry);
  const apiKey = readApiKey(given, sound, env);
  if (!checked.ok || !apiKey.ok) return openAiEntry.failure(checked, apiKey);
  const fields = checked.value;
  return {
    ok: true,
    value: {
      ...commonSettings(fields),
      type: 'openai',
      // An OpenAI-style base URL may end in /v1; the adapter adds the version itself.
      baseUrl: baseUrlOf(fields.base_url).replace(/\/v1$/, ''),
      apiKey: apiKey.value,
      models: upstreamNames(fields.models),
      passThroughUrls: fields.pass_through_urls ?? false,
      sizes: fields.sizes?.map(pixelSize) ?? DEFAULT_OPENAI_SIZES.map((size) => ({ ...size })),
      maxInputImages: fields.max_input_images ?? CHANNEL_DEFAULTS.openAiMaxInputImages,
      sendResponseFormat: fields.send_response_format ?? true,
    },
  };
}

function readLocal(entry: Mapping): Checked<LocalChannelConfig> {
  const { checked } = localEntry.check(entry);
  if (!checked.ok) return localEntry.failure(checked);
  const fields = checked.value;
  return {
    ok: true,
    value: {
      ...commonSettings(fields),
      type: 'local',
      models: upstreamNames(fields.models ?? DEFAULT_LOCAL_CHANNEL.models),
    },
  };
}

/** The key is read from the variable `api_key_env` names, or is `api_key` itself; never both. */
function readApiKey(
  given: Mapping,
  fields: { api_key_env?: string; api_key?: string },
  env: Environment,
): Checked<ApiKey | undefined> {
  if (given.api_key_env !== undefined && given.api_key !== undefined)
    return refused('api_key', 'and api_key_env are both set; use one');
  if (fields.api_key_env !== undefined) {
    const value = env[fields.api_key_env]?.trim() ?? '';
    if (value === '')
      return refused('api_key_env', `names ${fields.api_key_env}, which is not set`);
    return { ok: true, value: new ApiKey(value) };
  }
  const inline = fields.api_key?.trim();
  return { ok: true, value: inline === undefined ? undefined : new ApiKey(inline) };
}

function hasKeyField(given: Mapping): boolean {
  return given.api_key_env !== undefined || given.api_key !== undefined;
}

function commonSettings(fields: Omit<Static<typeof LocalEntry>, 'type' | 'models'>) {
  return {
    name: fields.name,
    priority: fields.priority ?? CHANNEL_DEFAULTS.priority,
    weight: fields.weight ?? CHANNEL_DEFAULTS.weight,
    timeoutMs: fields.timeout_ms ?? CHANNEL_DEFAULTS.timeoutMs,
    breaker: {
      failureThreshold: fields.breaker_threshold ?? CHANNEL_DEFAULTS.breakerFailureThreshold,
      cooldownMs: fields.breaker_cooldown_ms ?? CHANNEL_DEFAULTS.breakerCooldownMs,
    },
  };
}

/** Without a trailing slash; the adapter appends the protocol's paths. */
function baseUrlOf(text: string): string {
  const url = new URL(text);
  return `${url.origin}${url.pathname}`.replace(/\/+$/, '');
}

function upstreamNames(models: Readonly<ModelMap>): ModelMap {
  const names: ModelMap = {};
  for (const [model, name] of Object.entries(models))
    if (isModelId(model) && name !== undefined) names[model] = name.trim();
  return names;
}

function pixelSize(text: string): PixelSize {
  const [, width, height] = OPENAI_SIZE.exec(text) ?? [];
  return { width: Number(width), height: Number(height) };
}

function refused(path: string, text: string): Failure {
  return { ok: false, problems: [{ path, text }] };
}

function isChannelType(value: unknown): value is ChannelType {
  return (CHANNEL_TYPES as readonly unknown[]).includes(value);
}
