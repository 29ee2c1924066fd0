import type { Engine, PngImage } from '../engine/engine.js';
import { LocalEngine, type LocalEngineOptions } from '../engine/local/local-engine.js';
import type { ResultStore } from '../storage/result-store.js';
import { type Log, silentLog } from '../support/log.js';
import {
  type ChannelSetConfig,
  ReloadableRouter,
  type ReloadableRouterDependencies,
} from './reloadable-router.js';
import { UpstreamHttp } from './upstream-http.js';

export interface CreateRouterOptions {
  /** Where re-hosted upstream images are stored. */
  results: ResultStore;
  log?: Log;
  now?: () => number;
  /** The clock of the durations reported; the router's default (`performance.now`) otherwise. */
  monotonicNow?: () => number;
  random?: () => number;
  createLocalEngine?: () => Engine<PngImage>;
  /** How the shared LocalEngine is sized, when the caller supplies none. */
  localEngine?: LocalEngineOptions;
  /** The LocalEngine all local channels share, made by the caller (who reads its jobs). */
  sharedLocalEngine?: LocalEngine;
}

/**
 * The gateway's engine: the configured channels behind one reloadable router. Unless the caller
 * supplies its own, all local channels share one LocalEngine (one pool of worker threads, across
 * reloads too), which closing the router closes, whoever made it.
 */
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
      ...localEngineDependencies(options),
      ...(options.monotonicNow === undefined ? {} : { monotonicNow: options.monotonicNow }),
    },
  );
}

function localEngineDependencies(
  options: CreateRouterOptions,
): Pick<ReloadableRouterDependencies, 'createLocalEngine' | 'closeLocalEngine'> {
  const { createLocalEngine } = options;
  if (createLocalEngine !== undefined) return { createLocalEngine };
  const shared = options.sharedLocalEngine ?? new LocalEngine(options.localEngine);
  return { createLocalEngine: () => shared, closeLocalEngine: () => shared.close() };
}
