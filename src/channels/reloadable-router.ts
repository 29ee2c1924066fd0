import type { ChannelConfig } from '../config/channel-config.js';
import type { Engine, EngineJob, EngineRun } from '../engine/engine.js';
import {
  type Channel,
  type ChannelBuildDependencies,
  buildChannel,
  sameDefinition,
} from './channel.js';
import { ChannelRouter, type RouterDependencies } from './channel-router.js';
import type { ChannelStatus } from './channel-status.js';

export interface ChannelSetConfig {
  channels: readonly ChannelConfig[];
  routingDeadlineMs: number;
}

export interface ReloadSummary {
  added: string[];
  removed: string[];
  changed: string[];
  unchanged: string[];
}

export type ReloadableRouterDependencies = Omit<RouterDependencies, 'deadlineMs'> &
  Pick<ChannelBuildDependencies, 'createLocalEngine'> & {
    /** Ends the local engine's worker threads, when the router owns them. */
    closeLocalEngine?: () => Promise<void>;
  };

/**
 * The engine the pipeline calls. Each job runs on the router current when it started, so a
 * reload swaps the channel set for new requests while those in flight finish on the old one.
 * Channels a reload leaves unchanged keep their breaker and counters.
 */
export class ReloadableRouter implements Engine {
  private current: ChannelRouter;

  constructor(
    config: ChannelSetConfig,
    private readonly dependencies: ReloadableRouterDependencies,
  ) {
    this.current = this.build(config, []);
  }

  generate(job: EngineJob): EngineRun {
    return this.current.generate(job);
  }

  status(): ChannelStatus[] {
    return this.current.status();
  }

  reload(config: ChannelSetConfig): ReloadSummary {
    const previous = this.current.channels;
    this.current = this.build(config, previous);
    const names = new Set(config.channels.map((channel) => channel.name));
    const summary: ReloadSummary = { added: [], removed: [], changed: [], unchanged: [] };
    for (const channel of config.channels) {
      const old = previous.find((entry) => entry.config.name === channel.name);
      if (old === undefined) summary.added.push(channel.name);
      else if (sameDefinition(old.config, channel)) summary.unchanged.push(channel.name);
      else summary.changed.push(channel.name);
    }
    summary.removed = previous
      .map((channel) => channel.config.name)
      .filter((name) => !names.has(name));
    return summary;
  }

  /** The gateway drains: upstream calls stop when their callers leave, as the gateway's own work does. */
  drain(): void {
    this.dependencies.http.drain();
  }

  /** Closes upstream connections and local render threads once the requests using them are done. */
  async close(): Promise<void> {
    await Promise.all([this.dependencies.http.close(), this.dependencies.closeLocalEngine?.()]);
  }

  private build(config: ChannelSetConfig, previous: readonly Channel[]): ChannelRouter {
    const channels = config.channels.map((definition) => {
      const kept = previous.find(
        (channel) =>
          channel.config.name === definition.name && sameDefinition(channel.config, definition),
      );
      if (kept === undefined) return buildChannel(definition, this.dependencies);
      kept.health.restore();
      return kept;
    });
    return new ChannelRouter(
      channels,
      Object.assign({}, this.dependencies, { deadlineMs: config.routingDeadlineMs }),
    );
  }
}
