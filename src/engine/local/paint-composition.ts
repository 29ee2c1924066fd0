import type { Rgb } from './colour.js';
import type { Composition, Disc, LinearGradient, Shape, Slab } from './composition.js';
import { blendSpan, opacityToFixed, type RgbCanvas } from './rgb-canvas.js';

export interface PaintOptions {
  /** False leaves the canvas as the background (image-to-image paints shapes over the input). */
  background: boolean;
  /** Multiplies every shape's opacity. */
  shapeOpacity: number;
}

const GRADIENT_STEPS = 1024;

/**
 * Rasterises a composition onto the canvas. Every shape is filled row by row as spans computed
 * in closed form, so the cost is one pass for the background plus the shapes' areas, with no
 * per-pixel allocation or per-pixel shape test.
 */
export function paintComposition(
  canvas: RgbCanvas,
  composition: Composition,
  options: PaintOptions,
): void {
  if (options.background) paintGradient(canvas, composition.background);
  for (const shape of composition.shapes) paintShape(canvas, shape, options.shapeOpacity);
}

function paintGradient(canvas: RgbCanvas, gradient: LinearGradient): void {
  const { width, height, data } = canvas;
  const table = gradientTable(gradient.stops);
  const cos = Math.cos(gradient.angle);
  const sin = Math.sin(gradient.angle);
  const reach = (Math.abs(cos) * width + Math.abs(sin) * height) / 2;
  // Position along the gradient, as a table index, is linear in x and y.
  const perX = (cos / reach / 2) * (GRADIENT_STEPS - 1);
  const perY = (sin / reach / 2) * (GRADIENT_STEPS - 1);
  const atOrigin = (GRADIENT_STEPS - 1) / 2 - perX * (width / 2 - 0.5) - perY * (height / 2 - 0.5);
  let offset = 0;
  for (let y = 0; y < height; y++) {
    let position = atOrigin + perY * y;
    for (let x = 0; x < width; x++, offset += 3, position += perX) {
      const entry = Math.min(GRADIENT_STEPS - 1, Math.max(0, position | 0)) * 3;
      data[offset] = table[entry]!;
      data[offset + 1] = table[entry + 1]!;
      data[offset + 2] = table[entry + 2]!;
    }
  }
}

function gradientTable(stops: readonly [Rgb, Rgb, Rgb]): Uint8Array {
  const table = new Uint8Array(GRADIENT_STEPS * 3);
  const [first, middle, last] = stops;
  for (let step = 0; step < GRADIENT_STEPS; step++) {
    const t = step / (GRADIENT_STEPS - 1);
    const [from, to, amount] = t < 0.5 ? [first, middle, t * 2] : [middle, last, t * 2 - 1];
    table[step * 3] = Math.round(from.r + (to.r - from.r) * amount);
    table[step * 3 + 1] = Math.round(from.g + (to.g - from.g) * amount);
    table[step * 3 + 2] = Math.round(from.b + (to.b - from.b) * amount);
  }
  return table;
}

function paintShape(canvas: RgbCanvas, shape: Shape, opacityScale: number): void {
  const opacity = opacityToFixed(shape.opacity * opacityScale);
  if (opacity === 0) return;
  switch (shape.kind) {
    case 'disc':
      return paintDisc(canvas, shape, opacity);
    case 'band':
      return paintSlabs(canvas, [shape.slab], shape.colour, opacity);
    case 'panel':
      return paintSlabs(canvas, [shape.across, shape.along], shape.colour, opacity);
  }
}

function paintDisc(canvas: RgbCanvas, disc: Disc, opacity: number): void {
  const { width, height } = canvas;
  const scale = Math.sqrt(width * height);
  const centreX = disc.u * width;
  const centreY = disc.v * height;
  const radius = disc.radius * scale;
  const inner = radius * disc.hole;
  const top = Math.max(0, Math.ceil(centreY - radius - 0.5));
  const bottom = Math.min(height - 1, Math.floor(centreY + radius - 0.5));
  for (let y = top; y <= bottom; y++) {
    const dy = y + 0.5 - centreY;
    const half = Math.sqrt(Math.max(0, radius * radius - dy * dy));
    const left = clampColumn(Math.round(centreX - half), width);
    const right = clampColumn(Math.round(centreX + half), width);
    if (Math.abs(dy) < inner) {
      const innerHalf = Math.sqrt(inner * inner - dy * dy);
      const holeLeft = clampColumn(Math.round(centreX - innerHalf), width);
      const holeRight = clampColumn(Math.round(centreX + innerHalf), width);
      if (holeLeft > left) blendSpan(canvas, y, left, holeLeft, disc.colour, opacity);
      if (right > holeRight) blendSpan(canvas, y, holeRight, right, disc.colour, opacity);
    } else if (right > left) {
      blendSpan(canvas, y, left, right, disc.colour, opacity);
    }
  }
}

/** Fills the pixels whose centres lie inside every slab. */
function paintSlabs(canvas: RgbCanvas, slabs: readonly Slab[], colour: Rgb, opacity: number): void {
  const { width, height } = canvas;
  const scale = Math.sqrt(width * height);
  const lines = slabs.map((slab) => ({
    normalX: Math.cos(slab.angle),
    normalY: Math.sin(slab.angle),
    pointX: slab.u * width,
    pointY: slab.v * height,
    half: slab.halfWidth * scale,
  }));
  for (let y = 0; y < height; y++) {
    let left = 0;
    let right = width;
    for (const line of lines) {
      // Signed distance at column x is normalX * (x + 0.5 - pointX) + rowPart; solve |d| <= half.
      const rowPart = line.normalY * (y + 0.5 - line.pointY);
      if (Math.abs(line.normalX) < 1e-9) {
        if (Math.abs(rowPart) > line.half) right = left;
        continue;
      }
      const a = line.pointX - 0.5 + (-line.half - rowPart) / line.normalX;
      const b = line.pointX - 0.5 + (line.half - rowPart) / line.normalX;
      left = Math.max(left, Math.ceil(Math.min(a, b)));
      right = Math.min(right, Math.floor(Math.max(a, b)) + 1);
    }
    if (right > left) blendSpan(canvas, y, left, right, colour, opacity);
  }
}

function clampColumn(x: number, width: number): number {
  return Math.max(0, Math.min(width, x));
}
