import type { Rgb } from './colour.js';
import { type CompositionFamily, compositionVariant } from './composition.js';
import { paintComposition } from './paint-composition.js';
import { blendInsideMask } from './region-edit.js';
import { copyCanvas, createCanvas, type RgbCanvas } from './rgb-canvas.js';
import { mixHash, SeededRandom } from './seeded-random.js';
import { applyToneCurve, toneCurveFor } from './tone-shift.js';

/** The last input image at the output size, and the boxes to edit in it (0/1 mask), if any. */
export interface BaseImage {
  pixels: RgbCanvas;
  editMask: Uint8Array | undefined;
}

export interface ImageRecipe {
  width: number;
  height: number;
  family: CompositionFamily;
  familySeed: number;
  index: number;
  base: BaseImage | undefined;
  /** Colours lent by the reference images (inputs before the last). */
  referenceColours: readonly Rgb[];
}

/** How strongly an edited box shows the new content over the input. */
const EDIT_OPACITY = 0.85;
/** Shapes over an image-to-image result: visible, but the input stays the subject. */
const OVERLAY_OPACITY = 0.16;
const TONE_STREAM = 0x746f6e65;

/** One image before palette and watermark: text-to-image, image-to-image or a box edit. */
export function renderImage(recipe: ImageRecipe): RgbCanvas {
  const { family, index, base, referenceColours } = recipe;
  const variantSeed = mixHash(recipe.familySeed, index + 1);
  const composition = compositionVariant(family, variantSeed, index, referenceColours);

  if (base === undefined) {
    const canvas = createCanvas(recipe.width, recipe.height);
    paintComposition(canvas, composition, { background: true, shapeOpacity: 1 });
    return canvas;
  }
  if (base.editMask !== undefined) {
    const canvas = copyCanvas(base.pixels);
    const edit = createCanvas(canvas.width, canvas.height);
    paintComposition(edit, composition, { background: true, shapeOpacity: 1 });
    blendInsideMask(canvas, edit, base.editMask, EDIT_OPACITY);
    return canvas;
  }
  const tints = referenceColours.length > 0 ? referenceColours : family.scheme;
  const tint = tints[index % tints.length] ?? { r: 128, g: 128, b: 128 };
  const curve = toneCurveFor(new SeededRandom(mixHash(variantSeed, TONE_STREAM)), tint);
  const canvas = createCanvas(base.pixels.width, base.pixels.height);
  applyToneCurve(base.pixels, canvas, curve);
  paintComposition(canvas, composition, { background: false, shapeOpacity: OVERLAY_OPACITY });
  return canvas;
}
