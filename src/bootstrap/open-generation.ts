import type { Admission } from '../admission/admission.js';
import { createRouter } from '../channels/create-router.js';
import type { ReloadableRouter } from '../channels/reloadable-router.js';
import type { Config } from '../config/config.js';
import { LocalEngine } from '../engine/local/local-engine.js';
import { GenerationPipeline } from '../generation/generation-pipeline.js';
import { createInputLoader, type FetchingInputLoader } from '../inputs/create-input-loader.js';
import type { ResultStorage } from '../storage/create-result-storage.js';
import type { Log } from '../support/log.js';

/** What turns an admitted request into images: its inputs, the channels and the pipeline. */
export interface GenerationParts {
  /** The worker threads every local channel shares; closing the router closes them. */
  localEngine: LocalEngine;
  channels: ReloadableRouter;
  inputs: FetchingInputLoader;
  generation: GenerationPipeline;
}

export interface GenerationOptions {
  config: Config;
  storage: ResultStorage;
  admission: Admission;
  now: () => number;
  log: Log;
}

/** The local engine, the channel router over it, the input loader, and the pipeline over them. */
export function openGeneration(options: GenerationOptions): GenerationParts {
  const { config, storage, admission, now, log } = options;
  const { workers, queueLimit } = config.localEngine;
  const localEngine = new LocalEngine({
    ...(workers === undefined ? {} : { workers }),
    ...(queueLimit === undefined ? {} : { queueLimit }),
  });
  const channels = createRouter(config, {
    results: storage.results,
    log,
    now,
    sharedLocalEngine: localEngine,
  });
  const inputs = createInputLoader({
    allowPrivateAddresses: config.allowPrivateImageUrls,
    connectTimeoutMs: config.imageConnectTimeoutMs,
    totalTimeoutMs: config.imageFetchTimeoutMs,
    maxConcurrentFetches: config.maxImageFetches,
    stored: storage.storedInputs,
  });
  const generation = new GenerationPipeline({
    inputs,
    admission,
    engine: channels,
    results: storage.results,
  });
  return { localEngine, channels, inputs, generation };
}
