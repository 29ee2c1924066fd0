import type { ChannelConfig } from '../config/channel-config.js';
import type { Engine, PngImage } from '../engine/engine.js';
import type { ChannelAdapter } from './attempt-result.js';
import { type ChannelCapabilities, capabilitiesOf } from './capabilities.js';
import { ChannelHealth } from './channel-health.js';
import { DashScopeAdapter } from './dashscope/dashscope-adapter.js';
import { LocalAdapter } from './local/local-adapter.js';
import { OpenAiAdapter } from './openai/openai-adapter.js';
import type { UpstreamHttp } from './upstream-http.js';

/** One configured channel with its adapter, what it can do, and how it has been doing. */
export interface Channel {
  config: ChannelConfig;
  adapter: ChannelAdapter;
  capabilities: ChannelCapabilities;
  health: ChannelHealth;
}

export interface ChannelBuildDependencies {
  http: UpstreamHttp;
  /** The built-in renderer for `local` channels. */
  createLocalEngine: () => Engine<PngImage>;
  now: () => number;
}

export function buildChannel(
  config: ChannelConfig,
  dependencies: ChannelBuildDependencies,
): Channel {
  return {
    config,
    adapter: adapterFor(config, dependencies),
    capabilities: capabilitiesOf(config),
    health: new ChannelHealth(config.breaker, dependencies.now),
  };
}

function adapterFor(config: ChannelConfig, dependencies: ChannelBuildDependencies): ChannelAdapter {
  switch (config.type) {
    case 'dashscope':
      return new DashScopeAdapter(config, dependencies.http);
    case 'openai':
      return new OpenAiAdapter(config, dependencies.http);
    case 'local':
      return new LocalAdapter(dependencies.createLocalEngine());
  }
}

/** Whether two definitions describe the same channel (keys compared without revealing them). */
export function sameDefinition(a: ChannelConfig, b: ChannelConfig): boolean {
  const { apiKey: keyA, ...restA } = { apiKey: undefined, ...a };
  const { apiKey: keyB, ...restB } = { apiKey: undefined, ...b };
  const sameKey = keyA === undefined ? keyB === undefined : keyA.sameAs(keyB);
  return sameKey && JSON.stringify(restA) === JSON.stringify(restB);
}
