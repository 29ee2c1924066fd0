import type { BoundingBox, PixelSize } from '../../domain/generation-request.js';
import type { ImageFacts } from '../../domain/loaded-image.js';
import type { PreparedInputs } from './job-inputs.js';
import type { PngRecipe } from './render-png.js';

/*
 * What the engine and its worker threads send each other. Large pixel and image data is in
 * SharedArrayBuffers (read by several tasks, copied once) or transferred (the PNGs coming back).
 */

/** An input image whose bytes are in shared memory; they arrive as a Uint8Array, not a Buffer. */
export type SharedLoadedImage = ImageFacts & { bytes: Uint8Array };

export interface PrepareInputsTask {
  kind: 'prepareInputs';
  inputs: SharedLoadedImage[];
  output: PixelSize;
  boxesOfInput: readonly (readonly BoundingBox[])[];
}

/** The decoded base picture and edit mask are in shared memory, for every image's task to read. */
export type SharedPreparedInputs = PreparedInputs;

export interface RenderPngTask {
  kind: 'renderPng';
  recipe: PngRecipe;
}

export type RenderTask = PrepareInputsTask | RenderPngTask;

export interface RenderedPng {
  /** Transferred, not copied. */
  png: ArrayBuffer;
}
