import type { RgbCanvas } from './rgb-canvas.js';

/**
 * Interactive editing: inside the mask the result is mostly `edit`, with a trace of the input
 * left so the edit sits in the picture; outside, `target` keeps the input untouched.
 */
export function blendInsideMask(
  target: RgbCanvas,
  edit: RgbCanvas,
  mask: Uint8Array,
  editOpacity: number,
): void {
  const weight = Math.round(editOpacity * 256);
  const keep = 256 - weight;
  const output = target.data;
  const painted = edit.data;
  for (let pixel = 0; pixel < mask.length; pixel++) {
    if (mask[pixel] === 0) continue;
    const offset = pixel * 3;
    output[offset] = (output[offset]! * keep + painted[offset]! * weight) >> 8;
    output[offset + 1] = (output[offset + 1]! * keep + painted[offset + 1]! * weight) >> 8;
    output[offset + 2] = (output[offset + 2]! * keep + painted[offset + 2]! * weight) >> 8;
  }
}
