import sharp, { type PngOptions } from 'sharp';
import type { RgbCanvas } from './rgb-canvas.js';

/**
 * Pinned so that equal pixels always give equal bytes. zlib level 1 without adaptive filtering:
 * on a 4K composition about 3x faster than sharp's default (level 6) and 15x faster than level 6
 * with adaptive filtering, for files about twice as large; for a development engine, speed wins.
 * sharp writes no metadata unless asked, so there is no timestamp in the file.
 */
const PNG_OPTIONS = {
  compressionLevel: 1,
  adaptiveFiltering: false,
  palette: false,
  progressive: false,
} as const satisfies PngOptions;

export function encodePng(canvas: RgbCanvas): Promise<Buffer> {
  return sharp(canvas.data, { raw: { width: canvas.width, height: canvas.height, channels: 3 } })
    .png(PNG_OPTIONS)
    .toBuffer();
}
