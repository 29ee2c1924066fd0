/**
 * The watermark text `AI生成` as hand-made stroke glyphs, so it renders on machines without any
 * fonts. Each glyph is a set of polylines in em units: x from 0 to `advance`, y from 0 (top) to
 * 1 (baseline of the em box). The strokes follow the characters' real stroke order and shape,
 * drawn with a round pen.
 */
export interface StrokeGlyph {
  character: string;
  advance: number;
  strokes: readonly (readonly (readonly [number, number])[])[];
}

const LETTER_A: StrokeGlyph = {
  character: 'A',
  advance: 0.64,
  strokes: [
    [
      [0.05, 0.94],
      [0.32, 0.06],
      [0.59, 0.94],
    ],
    [
      [0.15, 0.64],
      [0.49, 0.64],
    ],
  ],
};

const LETTER_I: StrokeGlyph = {
  character: 'I',
  advance: 0.42,
  strokes: [
    [
      [0.21, 0.06],
      [0.21, 0.94],
    ],
    [
      [0.07, 0.06],
      [0.35, 0.06],
    ],
    [
      [0.07, 0.94],
      [0.35, 0.94],
    ],
  ],
};

/** 生: short left-falling stroke, two horizontals, the vertical, the long base. */
const SHENG: StrokeGlyph = {
  character: '生',
  advance: 1,
  strokes: [
    [
      [0.3, 0.06],
      [0.13, 0.42],
    ],
    [
      [0.22, 0.28],
      [0.86, 0.28],
    ],
    [
      [0.52, 0.05],
      [0.52, 0.92],
    ],
    [
      [0.16, 0.6],
      [0.84, 0.6],
    ],
    [
      [0.05, 0.92],
      [0.95, 0.92],
    ],
  ],
};

/** 成: top horizontal, the left sweep, the inner turn with hook, the slanting hook, its cross stroke, the dot. */
const CHENG: StrokeGlyph = {
  character: '成',
  advance: 1,
  strokes: [
    [
      [0.14, 0.27],
      [0.93, 0.27],
    ],
    [
      [0.16, 0.27],
      [0.16, 0.62],
      [0.05, 0.94],
    ],
    [
      [0.16, 0.5],
      [0.44, 0.5],
      [0.42, 0.84],
      [0.33, 0.79],
    ],
    [
      [0.55, 0.04],
      [0.63, 0.52],
      [0.92, 0.92],
      [0.96, 0.72],
    ],
    [
      [0.86, 0.44],
      [0.47, 0.93],
    ],
    [
      [0.72, 0.06],
      [0.83, 0.16],
    ],
  ],
};

/** The glyphs of the watermark text `AI生成`, in order. */
export const WATERMARK_GLYPHS: readonly StrokeGlyph[] = [LETTER_A, LETTER_I, SHENG, CHENG];
