import { isRunLength, parseBmpHeader } from './bmp-header.js';
import { decodeBgr, decodeIndexed, decodeMasked } from './bmp-pixel-rows.js';
import { decodeRunLength } from './bmp-run-length.js';
import type { RgbCanvas } from './rgb-canvas.js';
import { ShrinkingCanvas } from './shrinking-canvas.js';

const BLACK = { r: 0, g: 0, b: 0 };

/**
 * A BMP decoder, because sharp's libvips build reads no BMP. Covers what Windows and common
 * tools write: core and info headers (V1 to V5), 1/4/8-bit palettes, RLE4 and RLE8, 16/24/32-bit
 * with default or bit-field masks, bottom-up and top-down rows. Alpha, if any, is dropped.
 *
 * `shrink` (a whole number) box-averages the picture while decoding, as libvips shrinks JPEG on
 * load: only the shrunk picture is held. Throws BmpDecodeError for what it cannot read.
 */
export function decodeBmp(bytes: Uint8Array, shrink = 1): RgbCanvas {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const header = parseBmpHeader(bytes, view);
  const { width, height, bitsPerPixel, palette } = header;
  if (isRunLength(header)) {
    const background = { r: palette[0]!, g: palette[1]!, b: palette[2]! };
    const canvas = new ShrinkingCanvas(width, height, shrink, background);
    decodeRunLength(bytes, header, canvas);
    return canvas.finish();
  }
  const canvas = new ShrinkingCanvas(width, height, shrink, BLACK);
  if (bitsPerPixel <= 8) decodeIndexed(bytes, header, canvas);
  else if (bitsPerPixel === 24) decodeBgr(bytes, header, canvas);
  else decodeMasked(view, header, canvas);
  return canvas.finish();
}
