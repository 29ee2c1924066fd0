import type { Engine } from '../engine/engine.js';
import { LocalEngine } from '../engine/local/local-engine.js';
import type { ResultStore } from '../storage/result-store.js';
import { type ChannelLog, silentLog } from './channel-router.js';
import { type ChannelSetConfig, ReloadableRouter } from './reloadable-router.js';
import { UpstreamHttp } from './upstream-http.js';

export interface CreateRouterOptions {
  /** Where re-hosted upstream images are stored. */
  results: ResultStore;
  log?: ChannelLog;
  now?: () => number;
  random?: () => number;
  createLocalEngine?: () => Engine;
}

/** The gateway's engine: the configured channels behind one reloadable router. */
export function createRouter(
  config: ChannelSetConfig,
  options: CreateRouterOptions,
): ReloadableRouter {
  return new ReloadableRouter(
    { channels: config.channels, routingDeadlineMs: config.routingDeadlineMs },
    {
      http: new UpstreamHttp(),
      results: options.results,
      log: options.log ?? silentLog,
      now: options.now ?? Date.now,
      random: options.random ?? Math.random,
      createLocalEngine: options.createLocalEngine ?? (() => new LocalEngine()),
    },
  );
}
