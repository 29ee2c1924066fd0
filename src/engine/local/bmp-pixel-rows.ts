import { BmpDecodeError } from './bmp-decode-error.js';
import type { BmpHeader } from './bmp-header.js';
import type { ShrinkingCanvas } from './shrinking-canvas.js';

/*
 * Uncompressed BMP pixel arrays: every pixel is stored, so the work is one step per stored pixel
 * and the file must hold every row before any is read.
 */

function rowStride(header: BmpHeader): number {
  return Math.ceil((header.width * header.bitsPerPixel) / 32) * 4;
}

/** Where stored row `row` (0 = first in the file) starts in the file. */
function rowStart(header: BmpHeader, row: number): number {
  return header.pixelOffset + row * rowStride(header);
}

/** The last row needs its pixels, not its padding. */
function checkRowsPresent(bytes: Uint8Array, header: BmpHeader): void {
  const lastRowBytes = Math.ceil((header.width * header.bitsPerPixel) / 8);
  if (rowStart(header, header.height - 1) + lastRowBytes > bytes.length) {
    throw new BmpDecodeError('pixel data truncated');
  }
}

/** Stored row `row` is this row of the picture, 0 being the top. */
function pictureRow(header: BmpHeader, row: number): number {
  return header.topDown ? row : header.height - 1 - row;
}

export function decodeIndexed(bytes: Uint8Array, header: BmpHeader, canvas: ShrinkingCanvas): void {
  checkRowsPresent(bytes, header);
  const { width, height, bitsPerPixel, palette } = header;
  const perByte = 8 / bitsPerPixel;
  const mask = (1 << bitsPerPixel) - 1;
  for (let row = 0; row < height; row++) {
    const start = rowStart(header, row);
    canvas.startRow(pictureRow(header, row));
    for (let x = 0; x < width; x++) {
      const byte = bytes[start + Math.floor(x / perByte)]!;
      const shift = 8 - bitsPerPixel * ((x % perByte) + 1);
      const index = ((byte >> shift) & mask) * 3;
      canvas.put(x, palette[index]!, palette[index + 1]!, palette[index + 2]!);
    }
  }
}

export function decodeBgr(bytes: Uint8Array, header: BmpHeader, canvas: ShrinkingCanvas): void {
  checkRowsPresent(bytes, header);
  const { width, height } = header;
  for (let row = 0; row < height; row++) {
    let source = rowStart(header, row);
    canvas.startRow(pictureRow(header, row));
    for (let x = 0; x < width; x++, source += 3) {
      canvas.put(x, bytes[source + 2]!, bytes[source + 1]!, bytes[source]!);
    }
  }
}

interface Channel {
  mask: number;
  shift: number;
  /** Multiplier from the field's range to 0..255. */
  scale: number;
}

function channelOf(mask: number): Channel {
  if (mask === 0) return { mask: 0, shift: 0, scale: 0 };
  let shift = 0;
  while (((mask >>> shift) & 1) === 0) shift++;
  let bits = 0;
  while (bits + shift < 32 && ((mask >>> (shift + bits)) & 1) === 1) bits++;
  return { mask: mask >>> 0, shift, scale: 255 / (2 ** bits - 1) };
}

export function decodeMasked(view: DataView, header: BmpHeader, canvas: ShrinkingCanvas): void {
  const bytes = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
  checkRowsPresent(bytes, header);
  const { width, height, bitsPerPixel } = header;
  const [red, green, blue] = header.masks.map(channelOf) as [Channel, Channel, Channel];
  const bytesPerPixel = bitsPerPixel / 8;
  const field = (pixel: number, channel: Channel) =>
    Math.round((((pixel & channel.mask) >>> 0) >>> channel.shift) * channel.scale);
  for (let row = 0; row < height; row++) {
    let source = rowStart(header, row);
    canvas.startRow(pictureRow(header, row));
    for (let x = 0; x < width; x++, source += bytesPerPixel) {
      const pixel =
        bytesPerPixel === 2 ? view.getUint16(source, true) : view.getUint32(source, true);
      canvas.put(x, field(pixel, red), field(pixel, green), field(pixel, blue));
    }
  }
}
