import type { ApiKey } from '../domain/api-key.js';
import type { PixelSize } from '../domain/generation-request.js';
import { MODEL_A, MODEL_B, type ModelId } from '../domain/models.js';

export const CHANNEL_TYPES = ['dashscope', 'openai', 'local'] as const;
export type ChannelType = (typeof CHANNEL_TYPES)[number];

export const DASHSCOPE_MODES = ['sync', 'async'] as const;
export type DashScopeMode = (typeof DASHSCOPE_MODES)[number];

/** Our model id -> the upstream's model name. A channel serves exactly the models it maps. */
export type ModelMap = Partial<Record<ModelId, string>>;

export interface BreakerSettings {
  /** Consecutive failed attempts that open the circuit. */
  failureThreshold: number;
  /** How long an open circuit stays open before one trial request is let through. */
  cooldownMs: number;
}

interface ChannelCommon {
  name: string;
  models: ModelMap;
  /** Lower tiers are tried first. */
  priority: number;
  /** Share of the traffic within its priority tier. */
  weight: number;
  /** Per-attempt time-out; for async DashScope channels it bounds submission plus polling. */
  timeoutMs: number;
  breaker: BreakerSettings;
}

export interface DashScopeChannelConfig extends ChannelCommon {
  type: 'dashscope';
  /** Without a trailing slash; the adapter appends the protocol's paths. */
  baseUrl: string;
  apiKey: ApiKey;
  mode: DashScopeMode;
  /** Hand upstream image URLs to callers as they are instead of re-hosting them. */
  passThroughUrls: boolean;
  /** Async mode: first wait between task polls, growing by half each poll up to `maxMs`. */
  poll: { initialMs: number; maxMs: number };
}

export interface OpenAiChannelConfig extends ChannelCommon {
  type: 'openai';
  /** Without a trailing slash or `/v1`; the adapter appends `/v1/images/...`. */
  baseUrl: string;
  /** Self-hosted OpenAI-compatible servers may need none. */
  apiKey: ApiKey | undefined;
  passThroughUrls: boolean;
  /** Sizes the upstream accepts; a request's size is mapped to the closest of them. */
  sizes: PixelSize[];
  maxInputImages: number;
  /** OpenAI's gpt-image models reject `response_format` (they always answer b64_json). */
  sendResponseFormat: boolean;
}

export interface LocalChannelConfig extends ChannelCommon {
  type: 'local';
}

export type ChannelConfig = DashScopeChannelConfig | OpenAiChannelConfig | LocalChannelConfig;

/** The upstream names of our two models at DashScope (docs/channels.md). */
export const DEFAULT_DASHSCOPE_MODELS: Readonly<Record<ModelId, string>> = {
  [MODEL_A]: 'wan2.7-image-pro',
  [MODEL_B]: 'qwen-image-2.0-pro',
};

/** The sizes OpenAI's gpt-image models accept. */
export const DEFAULT_OPENAI_SIZES: readonly PixelSize[] = [
  { width: 1024, height: 1024 },
  { width: 1536, height: 1024 },
  { width: 1024, height: 1536 },
];

export const CHANNEL_DEFAULTS = {
  priority: 0,
  weight: 1,
  timeoutMs: 120_000,
  breakerFailureThreshold: 5,
  breakerCooldownMs: 30_000,
  pollInitialMs: 1_000,
  pollMaxMs: 10_000,
  openAiMaxInputImages: 16,
} as const;

/** With no channels configured, the built-in renderer serves both models. */
export const DEFAULT_LOCAL_CHANNEL: LocalChannelConfig = {
  type: 'local',
  name: 'local',
  models: { [MODEL_A]: 'local', [MODEL_B]: 'local' },
  priority: CHANNEL_DEFAULTS.priority,
  weight: CHANNEL_DEFAULTS.weight,
  timeoutMs: CHANNEL_DEFAULTS.timeoutMs,
  breaker: {
    failureThreshold: CHANNEL_DEFAULTS.breakerFailureThreshold,
    cooldownMs: CHANNEL_DEFAULTS.breakerCooldownMs,
  },
};
