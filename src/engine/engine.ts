import type { GenerationRequest, PixelSize } from '../domain/generation-request.js';
import type { LoadedImage } from '../domain/loaded-image.js';

/** One generation as an engine receives it: validated, inputs loaded, output size and seed decided. */
export interface EngineJob {
  request: GenerationRequest;
  /** The request's input images, in order, bytes loaded and checked. */
  inputs: LoadedImage[];
  /** The output size the size rules give; an engine may answer with a slightly different one. */
  output: PixelSize;
  /** The caller's seed, or one drawn for this request. */
  seed: number;
  requestId: string;
  signal: AbortSignal;
}

/**
 * A produced image: PNG bytes for the results stage to store, or a URL handed to the caller as it
 * is (the channel router has already re-hosted it into our storage, or its channel passes upstream
 * URLs through).
 */
export type EngineImage = { kind: 'png'; bytes: Buffer } | { kind: 'remote'; url: string };

export interface EngineOutput {
  images: EngineImage[];
  width: number;
  height: number;
  /** Informational token counts (model A usage); engines that know none leave it out. */
  tokens?: { input: number; output: number };
  /** Name of the channel that served the job (set by the channel router), for the ledger. */
  channel?: string;
  /** Time the serving channel's upstream took, re-hosting excluded (set by the channel router). */
  upstreamLatencyMs?: number;
  /** Images the upstream reports it produced and charges for (its `usage.image_count`). */
  upstreamImageCount?: number;
}

/** A way of turning a job into images: the local renderer or an upstream adapter. */
export interface Engine {
  generate(job: EngineJob): Promise<EngineOutput>;
}
