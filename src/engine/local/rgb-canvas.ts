import type { Rgb } from './colour.js';

/** An 8-bit RGB raster: rows top to bottom, 3 bytes a pixel, no row padding (sharp's raw layout). */
export interface RgbCanvas {
  readonly width: number;
  readonly height: number;
  readonly data: Uint8Array;
}

export function createCanvas(width: number, height: number): RgbCanvas {
  return { width, height, data: new Uint8Array(width * height * 3) };
}

export function copyCanvas(canvas: RgbCanvas): RgbCanvas {
  return { width: canvas.width, height: canvas.height, data: canvas.data.slice() };
}

/** Fixed-point opacity: 0 keeps the canvas, 256 replaces it. */
export function opacityToFixed(opacity: number): number {
  return Math.max(0, Math.min(256, Math.round(opacity * 256)));
}

/** Blends `colour` over pixels [x0, x1) of row `y`; the caller clips to the canvas. */
export function blendSpan(
  canvas: RgbCanvas,
  y: number,
  x0: number,
  x1: number,
  colour: Rgb,
  opacity256: number,
): void {
  const data = canvas.data;
  const keep = 256 - opacity256;
  const r = colour.r * opacity256;
  const g = colour.g * opacity256;
  const b = colour.b * opacity256;
  const end = (y * canvas.width + x1) * 3;
  for (let offset = (y * canvas.width + x0) * 3; offset < end; offset += 3) {
    data[offset] = (data[offset]! * keep + r) >> 8;
    data[offset + 1] = (data[offset + 1]! * keep + g) >> 8;
    data[offset + 2] = (data[offset + 2]! * keep + b) >> 8;
  }
}
