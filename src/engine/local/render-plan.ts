import type { BoundingBox, PaletteColor } from '../../domain/generation-request.js';
import { MODEL_A } from '../../domain/models.js';
import type { EngineJob } from '../engine.js';
import { hashText, mixHash } from './seeded-random.js';

/** What the local engine will produce for a job, decided before any pixel is touched. */
export interface RenderPlan {
  imageCount: number;
  /** Seeds the composition family: model, prompt, seed and the parameters that change the look. */
  familySeed: number;
  /** More shapes and accents: model A's thinking mode, model B's prompt extension. */
  detailed: boolean;
  palette: readonly PaletteColor[] | undefined;
  watermark: boolean;
  /** `bbox_list` entry of each input image, in its own pixels; empty when it has none. */
  boxesOfInput: readonly (readonly BoundingBox[])[];
}

export function planRender(job: EngineJob): RenderPlan {
  const { request, seed } = job;
  const boxesOfInput = job.inputs.map((_, index) =>
    request.model === MODEL_A ? (request.parameters.bboxList?.[index] ?? []) : [],
  );
  if (request.model === MODEL_A) {
    const parameters = request.parameters;
    const familySeed = hashText(
      JSON.stringify([request.model, request.prompt.text, seed, parameters.thinkingMode]),
    );
    return {
      // Sequential mode: the "model" decides how many, here from prompt and seed, within n.
      imageCount: parameters.sequential
        ? 1 + (mixHash(familySeed, hashText('image count')) % parameters.n)
        : parameters.n,
      familySeed,
      detailed: parameters.thinkingMode,
      palette: parameters.colorPalette,
      watermark: parameters.watermark,
      boxesOfInput,
    };
  }
  const parameters = request.parameters;
  const familySeed = hashText(
    JSON.stringify([
      request.model,
      request.prompt.text,
      seed,
      parameters.negativePrompt ?? null,
      parameters.promptExtend,
    ]),
  );
  return {
    imageCount: parameters.n,
    familySeed,
    detailed: parameters.promptExtend,
    palette: undefined,
    watermark: parameters.watermark,
    boxesOfInput,
  };
}
