// Test images made at run time: sharp for JPEG, PNG and WEBP; BMP headers and the PNG tRNS
// chunk are written by hand because sharp writes neither.
import { crc32 } from 'node:zlib';
import sharp from 'sharp';
import type { InputImage } from '../../src/domain/generation-request.js';

const BACKGROUND = { r: 200, g: 120, b: 40, alpha: 0.6 };

function canvas(width: number, height: number, channels: 3 | 4) {
  return sharp({ create: { width, height, channels, background: BACKGROUND } });
}

export function makeJpeg(
  width: number,
  height: number,
  options: { progressive?: boolean } = {},
): Promise<Buffer> {
  return canvas(width, height, 3)
    .jpeg({ progressive: options.progressive ?? false })
    .toBuffer();
}

export type PngKind = 'rgb' | 'rgba' | 'grey' | 'grey-alpha' | 'palette' | 'palette-alpha';

export function makePng(width: number, height: number, kind: PngKind = 'rgb'): Promise<Buffer> {
  const withAlpha = kind === 'rgba' || kind === 'grey-alpha' || kind === 'palette-alpha';
  let image = canvas(width, height, withAlpha ? 4 : 3);
  if (kind === 'grey' || kind === 'grey-alpha') image = image.toColourspace('b-w');
  const palette = kind === 'palette' || kind === 'palette-alpha';
  return image.png({ palette }).toBuffer();
}

export function pngChunk(type: string, data: Buffer): Buffer {
  const typeAndData = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const chunk = Buffer.alloc(12 + data.length);
  chunk.writeUInt32BE(data.length, 0);
  typeAndData.copy(chunk, 4);
  chunk.writeUInt32BE(crc32(typeAndData), 8 + data.length);
  return chunk;
}

/** Inserts a chunk right after IHDR (signature 8 bytes + IHDR chunk 25 bytes). */
export function insertPngChunk(png: Buffer, chunk: Buffer): Buffer {
  const afterIhdr = 8 + 25;
  return Buffer.concat([png.subarray(0, afterIhdr), chunk, png.subarray(afterIhdr)]);
}

/** An RGB PNG with a `tRNS` chunk marking one colour transparent. */
export async function makePngWithTransparency(width: number, height: number): Promise<Buffer> {
  const transparentRgb = Buffer.from([0, 200, 0, 120, 0, 40]);
  return insertPngChunk(await makePng(width, height, 'rgb'), pngChunk('tRNS', transparentRgb));
}

export type BmpHeaderKind = 'core' | 'info' | 'v5';

export interface BmpOptions {
  header?: BmpHeaderKind;
  bitsPerPixel?: 1 | 24;
  topDown?: boolean;
  compression?: number;
}

const DIB_LENGTH: Record<BmpHeaderKind, number> = { core: 12, info: 40, v5: 124 };

export function makeBmp(width: number, height: number, options: BmpOptions = {}): Buffer {
  const header = options.header ?? 'info';
  const bitsPerPixel = options.bitsPerPixel ?? 24;
  const dibLength = DIB_LENGTH[header];
  const paletteEntrySize = header === 'core' ? 3 : 4;
  const paletteLength = bitsPerPixel === 1 ? 2 * paletteEntrySize : 0;
  const rowStride = Math.ceil((width * bitsPerPixel) / 32) * 4;
  const pixelOffset = 14 + dibLength + paletteLength;
  const bytes = Buffer.alloc(pixelOffset + rowStride * height, 0x7f);

  bytes.write('BM', 0, 'latin1');
  bytes.writeUInt32LE(bytes.length, 2);
  bytes.writeUInt32LE(0, 6);
  bytes.writeUInt32LE(pixelOffset, 10);
  bytes.fill(0, 14, pixelOffset);
  bytes.writeUInt32LE(dibLength, 14);
  if (header === 'core') {
    bytes.writeUInt16LE(width, 18);
    bytes.writeUInt16LE(height, 20);
    bytes.writeUInt16LE(1, 22);
    bytes.writeUInt16LE(bitsPerPixel, 24);
  } else {
    bytes.writeInt32LE(width, 18);
    bytes.writeInt32LE(options.topDown === true ? -height : height, 22);
    bytes.writeUInt16LE(1, 26);
    bytes.writeUInt16LE(bitsPerPixel, 28);
    bytes.writeUInt32LE(options.compression ?? 0, 30);
  }
  if (paletteLength > 0) bytes.fill(0xff, 14 + dibLength + paletteEntrySize, pixelOffset);
  return bytes;
}

export type WebpKind = 'lossy' | 'lossless' | 'extended';

/** Lossy gives a VP8 chunk, lossless VP8L, and lossy with alpha the extended VP8X form. */
export function makeWebp(width: number, height: number, kind: WebpKind = 'lossy'): Promise<Buffer> {
  return canvas(width, height, kind === 'extended' ? 4 : 3)
    .webp({ lossless: kind === 'lossless' })
    .toBuffer();
}

export function makeGif(width: number, height: number): Promise<Buffer> {
  return canvas(width, height, 3).gif().toBuffer();
}

export function makeTiff(width: number, height: number): Promise<Buffer> {
  return canvas(width, height, 3).tiff().toBuffer();
}

/** `bytes` followed by zeros up to `length`: a valid header with a file of any size. */
export function padTo(bytes: Buffer, length: number): Buffer {
  const padded = Buffer.alloc(length);
  bytes.copy(padded);
  return padded;
}

export function toDataUrl(bytes: Buffer, mime = 'image/png'): string {
  return `data:${mime};base64,${bytes.toString('base64')}`;
}

export function imagePath(index: number): string {
  return `input.messages[0].content[${index}].image`;
}

export function dataImage(bytes: Buffer, index = 1, declaredMime = 'image/png'): InputImage {
  return {
    path: imagePath(index),
    source: { kind: 'data', declaredMime, base64: bytes.toString('base64') },
  };
}

export function urlImage(url: string, index = 1): InputImage {
  return { path: imagePath(index), source: { kind: 'url', url } };
}

/** Runs `make` once, on first use. */
export function once<T>(make: () => Promise<T> | T): () => Promise<T> {
  let made: Promise<T> | undefined;
  return () => (made ??= Promise.resolve().then(make));
}
