import type { PaletteColor } from '../../domain/generation-request.js';
import type { Rgb } from './colour.js';
import { compositionFamily } from './composition.js';
import { paintPalette, paletteArea } from './palette-painter.js';
import { encodePng } from './png-encoding.js';
import { type BaseImage, renderImage } from './render-image.js';
import { drawWatermark, watermarkBox } from './watermark.js';

/** Everything that decides one output image's bytes; plain data, so it can cross to a worker. */
export interface PngRecipe {
  width: number;
  height: number;
  familySeed: number;
  detailed: boolean;
  index: number;
  base: BaseImage | undefined;
  referenceColours: readonly Rgb[];
  palette: readonly PaletteColor[] | undefined;
  watermark: boolean;
}

/** One finished image: composition, then palette, then watermark, encoded as PNG. */
export function renderPng(recipe: PngRecipe): Promise<Buffer> {
  const { width, height, base, palette } = recipe;
  const canvas = renderImage({
    width,
    height,
    family: compositionFamily(recipe.familySeed, recipe.detailed),
    familySeed: recipe.familySeed,
    index: recipe.index,
    base,
    referenceColours: recipe.referenceColours,
  });
  if (palette !== undefined) {
    const watermark = recipe.watermark ? watermarkBox(width, height) : undefined;
    paintPalette(canvas, palette, paletteArea(canvas, base?.editMask, watermark));
  }
  if (recipe.watermark) drawWatermark(canvas);
  return encodePng(canvas);
}
