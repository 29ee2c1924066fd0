import type { GenerationRequest } from '../domain/generation-request.js';
import type { LoadedImage } from '../domain/loaded-image.js';
import { MODEL_A } from '../domain/models.js';
import { invalidParameter } from '../errors/gateway-error.js';

/** The part of the bbox rules that needs image dimensions: every box lies inside its image. */
export function checkBoxesInsideImages(
  request: GenerationRequest,
  inputs: readonly LoadedImage[],
): void {
  if (request.model !== MODEL_A || request.parameters.bboxList === undefined) return;
  request.parameters.bboxList.forEach((boxes, imageIndex) => {
    const image = inputs[imageIndex];
    if (image === undefined) return;
    boxes.forEach((box, boxIndex) => {
      const [, , x2, y2] = box;
      if (x2 > image.width || y2 > image.height) {
        throw invalidParameter(
          `parameters.bbox_list[${imageIndex}][${boxIndex}]`,
          `must lie inside input image ${imageIndex} (${image.width}*${image.height}), got [${box.join(', ')}]`,
        );
      }
    });
  });
}
