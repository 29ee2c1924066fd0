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

/** A produced image: PNG bytes, or a URL at the upstream that the results stage re-hosts or passes on. */
export type EngineImage = { kind: 'png'; bytes: Buffer } | { kind: 'remote'; url: string };

export interface EngineOutput {
  images: EngineImage[];
  width: number;
  height: number;
  /** Informational token counts (model A usage); engines that know none leave it out. */
  tokens?: { input: number; output: number };
}

/** A way of turning a job into images: the local renderer or an upstream adapter. */
export interface Engine {
  generate(job: EngineJob): Promise<EngineOutput>;
}
