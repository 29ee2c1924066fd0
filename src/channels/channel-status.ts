import type { ChannelType, ModelMap } from '../config/channel-config.js';
import type { ChannelCapabilities } from './capabilities.js';
import type { Channel } from './channel.js';
import type { BreakerState } from './circuit-breaker.js';

/** One channel as `GET /admin/channels` shows it. Holds no key, only whether one is set. */
export interface ChannelStatus {
  name: string;
  type: ChannelType;
  baseUrl: string | undefined;
  mode: 'sync' | 'async' | undefined;
  models: ModelMap;
  priority: number;
  weight: number;
  timeoutMs: number;
  apiKey: 'set' | 'none';
  passThroughUrls: boolean;
  capabilities: ChannelCapabilities;
  /** `available` (closed), `open`, `half-open`, or `key-rejected` (taken out until a reload). */
  health: 'available' | 'open' | 'half-open' | 'key-rejected';
  breaker: {
    state: BreakerState;
    consecutiveFailures: number;
    failureThreshold: number;
    cooldownMs: number;
    reopensAt: string | undefined;
  };
  keyRejected: { at: string; detail: string } | undefined;
  stats: {
    attempts: number;
    successes: number;
    failures: number;
    inFlight: number;
    lastSuccessAt: string | undefined;
    /** To a tenth of a millisecond. */
    lastLatencyMs: number | undefined;
    lastFailure: { at: string; detail: string } | undefined;
  };
}

const iso = (at: number | undefined) => (at === undefined ? undefined : new Date(at).toISOString());

export function channelStatus(channel: Channel): ChannelStatus {
  const { config, health } = channel;
  const breakerState = health.breaker.state();
  const upstream = config.type === 'local' ? undefined : config;
  return {
    name: config.name,
    type: config.type,
    baseUrl: upstream?.baseUrl,
    mode: config.type === 'dashscope' ? config.mode : undefined,
    models: { ...config.models },
    priority: config.priority,
    weight: config.weight,
    timeoutMs: config.timeoutMs,
    apiKey: upstream?.apiKey === undefined ? 'none' : 'set',
    passThroughUrls: upstream?.passThroughUrls ?? false,
    capabilities: { ...channel.capabilities },
    health:
      health.keyRejected !== undefined
        ? 'key-rejected'
        : breakerState === 'closed'
          ? 'available'
          : breakerState,
    breaker: {
      state: breakerState,
      consecutiveFailures: health.breaker.failures(),
      failureThreshold: config.breaker.failureThreshold,
      cooldownMs: config.breaker.cooldownMs,
      reopensAt: iso(health.breaker.reopensAt()),
    },
    keyRejected:
      health.keyRejected === undefined
        ? undefined
        : { at: iso(health.keyRejected.at) as string, detail: health.keyRejected.detail },
    stats: {
      attempts: health.attempts,
      successes: health.successes,
      failures: health.failures,
      inFlight: health.inFlight,
      lastSuccessAt: iso(health.lastSuccessAt),
      lastLatencyMs:
        health.lastLatencyMs === undefined ? undefined : Math.round(health.lastLatencyMs * 10) / 10,
      lastFailure:
        health.lastFailure === undefined
          ? undefined
          : { at: iso(health.lastFailure.at) as string, detail: health.lastFailure.detail },
    },
  };
}
