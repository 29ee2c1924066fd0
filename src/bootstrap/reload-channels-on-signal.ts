import type { EventEmitter } from 'node:events';
import type { ChannelSetConfig, ReloadableRouter } from '../channels/reloadable-router.js';
import { ConfigError } from '../config/load-config.js';
import type { Log } from '../support/log.js';

export interface ReloadOnSignalOptions {
  router: Pick<ReloadableRouter, 'reload'>;
  /** Reads the configuration again (`loadConfig`); throws ConfigError with every problem. */
  loadConfig: () => ChannelSetConfig;
  log: Log;
  /** Default: the process and SIGHUP. */
  emitter?: EventEmitter;
  signal?: string;
}

/**
 * On SIGHUP, re-reads the configuration and swaps in its channel set. A configuration with
 * problems is refused as a whole and logged; the running channels stay. Returns the uninstaller.
 */
export function reloadChannelsOnSignal(options: ReloadOnSignalOptions): () => void {
  const emitter = options.emitter ?? process;
  const signal = options.signal ?? 'SIGHUP';
  const reload = () => {
    let config: ChannelSetConfig;
    try {
      config = options.loadConfig();
    } catch (error) {
      options.log.error(
        {
          signal,
          problems: error instanceof ConfigError ? error.problems : [String(error)],
        },
        'configuration not reloaded; the running channels stay',
      );
      return;
    }
    const summary = options.router.reload(config);
    options.log.info({ signal, ...summary }, 'channels reloaded');
  };
  emitter.on(signal, reload);
  return () => {
    emitter.off(signal, reload);
  };
}
