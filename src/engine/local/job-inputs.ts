import type { EngineJob } from '../engine.js';
import type { Rgb } from './colour.js';
import { referenceColour, resizedInput } from './input-pixels.js';
import { boxMask, mapBoxToOutput } from './pixel-box.js';
import type { BaseImage } from './render-image.js';
import type { RenderPlan } from './render-plan.js';

export interface PreparedInputs {
  /** The last input at the output size, with its edit boxes; undefined for text-to-image. */
  base: BaseImage | undefined;
  /** One colour from each input before the last (or from its boxes, when it has some). */
  referenceColours: Rgb[];
}

/** Decodes what the job's input images contribute, all images concurrently. */
export async function prepareInputs(job: EngineJob, plan: RenderPlan): Promise<PreparedInputs> {
  const last = job.inputs.at(-1);
  const references = job.inputs.slice(0, -1);
  const [pixels, referenceColours] = await Promise.all([
    last === undefined ? undefined : resizedInput(last, job.output),
    Promise.all(
      references.map((image, index) => referenceColour(image, plan.boxesOfInput[index] ?? [])),
    ),
  ]);
  if (last === undefined || pixels === undefined) return { base: undefined, referenceColours };
  const editBoxes = (plan.boxesOfInput[job.inputs.length - 1] ?? []).map((box) =>
    mapBoxToOutput(box, last, job.output),
  );
  const editMask = editBoxes.length > 0 ? boxMask(job.output, editBoxes) : undefined;
  return { base: { pixels, editMask }, referenceColours };
}
