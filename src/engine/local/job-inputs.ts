import type { BoundingBox, PixelSize } from '../../domain/generation-request.js';
import type { Rgb } from './colour.js';
import { type InputWithBytes, referenceColour, resizedInput } from './input-pixels.js';
import { boxMask, mapBoxToOutput } from './pixel-box.js';
import type { BaseImage } from './render-image.js';

export interface PreparedInputs {
  /** The last input at the output size, with its edit boxes; undefined for text-to-image. */
  base: BaseImage | undefined;
  /** One colour from each input before the last (or from its boxes, when it has some). */
  referenceColours: Rgb[];
}

/** Decodes what the job's input images contribute, all images concurrently. */
export async function prepareInputs(
  inputs: readonly InputWithBytes[],
  output: PixelSize,
  boxesOfInput: readonly (readonly BoundingBox[])[],
): Promise<PreparedInputs> {
  const last = inputs.at(-1);
  const references = inputs.slice(0, -1);
  const [pixels, referenceColours] = await Promise.all([
    last === undefined ? undefined : resizedInput(last, output),
    Promise.all(
      references.map((image, index) => referenceColour(image, boxesOfInput[index] ?? [])),
    ),
  ]);
  if (last === undefined || pixels === undefined) return { base: undefined, referenceColours };
  const editBoxes = (boxesOfInput[inputs.length - 1] ?? []).map((box) =>
    mapBoxToOutput(box, last, output),
  );
  const editMask = editBoxes.length > 0 ? boxMask(output, editBoxes) : undefined;
  return { base: { pixels, editMask }, referenceColours };
}
