import type { PixelBox } from './pixel-box.js';
import type { RgbCanvas } from './rgb-canvas.js';
import { type StrokeGlyph, WATERMARK_GLYPHS } from './watermark-glyphs.js';

/** Text height as a share of sqrt(width * height): readable at 1K, not dominant at 4K. */
const EM_PER_SCALE = 0.032;
const MIN_EM = 16;
const GLYPH_GAP_EM = 0.1;
const PAD_X_EM = 0.35;
const PAD_Y_EM = 0.25;
const MARGIN_EM = 0.45;
const PEN_HALF_WIDTH_EM = 0.055;
/** The backing box darkens what is under it this much; the glyphs are white on it. */
const BACKING_OPACITY = 0.72;

interface WatermarkLayout {
  box: PixelBox;
  em: number;
  textX: number;
  textY: number;
}

function layoutFor(width: number, height: number): WatermarkLayout {
  const advance =
    WATERMARK_GLYPHS.reduce((sum, glyph) => sum + glyph.advance, 0) +
    GLYPH_GAP_EM * (WATERMARK_GLYPHS.length - 1);
  const measure = (em: number) => {
    const padX = Math.round(PAD_X_EM * em);
    const padY = Math.round(PAD_Y_EM * em);
    const margin = Math.round(MARGIN_EM * em);
    const boxWidth = Math.ceil(advance * em) + 2 * padX;
    const boxHeight = em + 2 * padY;
    return { padX, padY, margin, boxWidth, boxHeight };
  };
  let em = Math.max(MIN_EM, Math.round(Math.sqrt(width * height) * EM_PER_SCALE));
  // Narrow or short images (down to 1:8) shrink the text rather than crop it.
  while (em > 4) {
    const fit = measure(em);
    if (fit.boxWidth + fit.margin <= width / 2 && fit.boxHeight + fit.margin <= height / 4) break;
    em--;
  }
  const { padX, padY, margin, boxWidth, boxHeight } = measure(em);
  const box = {
    x: width - margin - boxWidth,
    y: height - margin - boxHeight,
    width: boxWidth,
    height: boxHeight,
  };
  return { box, em, textX: box.x + padX, textY: box.y + padY };
}

/** The rectangle the watermark changes (backing box and text) in a width x height image. */
export function watermarkBox(width: number, height: number): PixelBox {
  return layoutFor(width, height).box;
}

/**
 * How much of each pixel of the watermark box the text's ink covers, 0..255, rows of
 * `box.width`. Exported so tests can check the glyphs where they should be.
 */
export function watermarkInk(width: number, height: number): { box: PixelBox; ink: Uint8Array } {
  const { box, em, textX, textY } = layoutFor(width, height);
  const ink = new Uint8Array(box.width * box.height);
  const pen = PEN_HALF_WIDTH_EM * em;
  let originX = textX;
  for (const glyph of WATERMARK_GLYPHS) {
    const segments = segmentsOf(glyph, originX, textY, em);
    const left = Math.max(box.x, Math.floor(originX - pen - 1));
    const right = Math.min(box.x + box.width, Math.ceil(originX + glyph.advance * em + pen + 1));
    for (let y = box.y; y < box.y + box.height; y++) {
      for (let x = left; x < right; x++) {
        const distance = distanceToSegments(x + 0.5, y + 0.5, segments);
        const coverage = Math.min(1, Math.max(0, pen + 0.5 - distance));
        const index = (y - box.y) * box.width + (x - box.x);
        ink[index] = Math.max(ink[index]!, Math.round(coverage * 255));
      }
    }
    originX += (glyph.advance + GLYPH_GAP_EM) * em;
  }
  return { box, ink };
}

/** Darkens the watermark box and writes `AI生成` in white on it, bottom-right. */
export function drawWatermark(canvas: RgbCanvas): void {
  const { box, ink } = watermarkInk(canvas.width, canvas.height);
  const keep = 1 - BACKING_OPACITY;
  const data = canvas.data;
  for (let row = 0; row < box.height; row++) {
    for (let column = 0; column < box.width; column++) {
      const coverage = ink[row * box.width + column]! / 255;
      const offset = ((box.y + row) * canvas.width + box.x + column) * 3;
      for (let channel = 0; channel < 3; channel++) {
        const backed = data[offset + channel]! * keep;
        data[offset + channel] = Math.round(backed + (255 - backed) * coverage);
      }
    }
  }
}

type Segment = readonly [number, number, number, number];

function segmentsOf(glyph: StrokeGlyph, originX: number, originY: number, em: number): Segment[] {
  const segments: Segment[] = [];
  for (const stroke of glyph.strokes) {
    for (let i = 1; i < stroke.length; i++) {
      const [fromX, fromY] = stroke[i - 1]!;
      const [toX, toY] = stroke[i]!;
      segments.push([
        originX + fromX * em,
        originY + fromY * em,
        originX + toX * em,
        originY + toY * em,
      ]);
    }
  }
  return segments;
}

function distanceToSegments(x: number, y: number, segments: readonly Segment[]): number {
  let nearest = Infinity;
  for (const [x1, y1, x2, y2] of segments) {
    const dx = x2 - x1;
    const dy = y2 - y1;
    const lengthSquared = dx * dx + dy * dy;
    const t =
      lengthSquared === 0
        ? 0
        : Math.max(0, Math.min(1, ((x - x1) * dx + (y - y1) * dy) / lengthSquared));
    const distance = Math.hypot(x - (x1 + t * dx), y - (y1 + t * dy));
    if (distance < nearest) nearest = distance;
  }
  return nearest;
}
