import type { BoundingBox, PixelSize } from '../../domain/generation-request.js';

/** A rectangle of output pixels: columns [x, x + width), rows [y, y + height). */
export interface PixelBox {
  readonly x: number;
  readonly y: number;
  readonly width: number;
  readonly height: number;
}

/**
 * A box in an input image's pixels, mapped onto the output raster. The input is stretched to the
 * output size, so each axis scales on its own; edges round outwards so the edit covers the box.
 */
export function mapBoxToOutput(box: BoundingBox, from: PixelSize, to: PixelSize): PixelBox {
  const [x1, y1, x2, y2] = box;
  const scaleX = to.width / from.width;
  const scaleY = to.height / from.height;
  const left = clamp(Math.floor(x1 * scaleX), 0, to.width);
  const top = clamp(Math.floor(y1 * scaleY), 0, to.height);
  const right = clamp(Math.ceil(x2 * scaleX), left, to.width);
  const bottom = clamp(Math.ceil(y2 * scaleY), top, to.height);
  return { x: left, y: top, width: right - left, height: bottom - top };
}

function clamp(value: number, min: number, max: number): number {
  return Math.max(min, Math.min(max, value));
}

/** 1 for pixels inside any of `boxes`, 0 elsewhere; one byte a pixel, rows top to bottom. */
export function boxMask(size: PixelSize, boxes: readonly PixelBox[]): Uint8Array {
  const mask = new Uint8Array(size.width * size.height);
  for (const box of boxes) {
    for (let y = box.y; y < box.y + box.height; y++) {
      const row = y * size.width;
      mask.fill(1, row + box.x, row + box.x + box.width);
    }
  }
  return mask;
}
