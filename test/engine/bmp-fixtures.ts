import type { Pixels } from './engine-fixtures.js';

export interface BmpParts {
  headerSize: 12 | 40 | 108 | 124;
  width: number;
  /** Negative for top-down rows. */
  height: number;
  bitsPerPixel: number;
  compression?: number;
  /** RGB entries. */
  palette?: readonly (readonly [number, number, number])[];
  masks?: readonly [number, number, number];
  /** The pixel array exactly as stored, rows padded by the caller. */
  pixelData: Uint8Array;
}

/** Assembles a BMP file from its parts, for decoder tests. */
export function buildBmp(parts: BmpParts): Buffer {
  const compression = parts.compression ?? 0;
  const core = parts.headerSize === 12;
  const masksAfterHeader = parts.headerSize === 40 && compression === 3 ? 12 : 0;
  const palette = parts.palette ?? [];
  const paletteBytes = palette.length * (core ? 3 : 4);
  const pixelOffset = 14 + parts.headerSize + masksAfterHeader + paletteBytes;
  const file = Buffer.alloc(pixelOffset + parts.pixelData.length);
  file.write('BM', 0, 'latin1');
  file.writeUInt32LE(file.length, 2);
  file.writeUInt32LE(pixelOffset, 10);
  file.writeUInt32LE(parts.headerSize, 14);
  if (core) {
    file.writeUInt16LE(parts.width, 18);
    file.writeUInt16LE(parts.height, 20);
    file.writeUInt16LE(1, 22);
    file.writeUInt16LE(parts.bitsPerPixel, 24);
  } else {
    file.writeInt32LE(parts.width, 18);
    file.writeInt32LE(parts.height, 22);
    file.writeUInt16LE(1, 26);
    file.writeUInt16LE(parts.bitsPerPixel, 28);
    file.writeUInt32LE(compression, 30);
    file.writeUInt32LE(parts.pixelData.length, 34);
    file.writeUInt32LE(palette.length, 46);
    if (parts.masks !== undefined) {
      parts.masks.forEach((mask, index) => file.writeUInt32LE(mask, 54 + index * 4));
    }
  }
  let at = 14 + parts.headerSize + masksAfterHeader;
  for (const [r, g, b] of palette) {
    file[at] = b;
    file[at + 1] = g;
    file[at + 2] = r;
    at += core ? 3 : 4;
  }
  file.set(parts.pixelData, pixelOffset);
  return file;
}

/** A plain 24-bit BMP of `pixels`, bottom-up unless `topDown`. */
export function bmp24(pixels: Pixels, topDown = false): Buffer {
  const stride = Math.ceil((pixels.width * 3) / 4) * 4;
  const data = new Uint8Array(stride * pixels.height);
  for (let row = 0; row < pixels.height; row++) {
    const sourceRow = topDown ? row : pixels.height - 1 - row;
    for (let x = 0; x < pixels.width; x++) {
      const source = (sourceRow * pixels.width + x) * 3;
      const target = row * stride + x * 3;
      data[target] = pixels.data[source + 2]!;
      data[target + 1] = pixels.data[source + 1]!;
      data[target + 2] = pixels.data[source]!;
    }
  }
  return buildBmp({
    headerSize: 40,
    width: pixels.width,
    height: topDown ? -pixels.height : pixels.height,
    bitsPerPixel: 24,
    pixelData: data,
  });
}

const GREYS: readonly (readonly [number, number, number])[] = Array.from(
  { length: 256 },
  (_, index) => [index, index, index] as const,
);
const RLE8 = 1;
const END_OF_BITMAP = [0, 1] as const;

/**
 * A decode bomb of about 1 KB (its 256-entry palette): an RLE8 BMP declaring `side` x `side`
 * pixels whose stream ends at once, leaving every pixel to the decoder.
 */
export function emptyRleBomb(side = 8000): Buffer {
  return buildBmp({
    headerSize: 40,
    width: side,
    height: side,
    bitsPerPixel: 8,
    compression: RLE8,
    palette: GREYS,
    pixelData: Uint8Array.from(END_OF_BITMAP),
  });
}

/**
 * A decode bomb of `fileBytes` bytes: an RLE8 BMP whose stream is nothing but 255-pixel runs on
 * its first row, so almost every run lies past the row's end, then end of bitmap. Valid: a
 * decoder must read it all.
 */
export function longRunRleBomb(fileBytes: number, width = 8000, height = 8000): Buffer {
  const pixelBytes = fileBytes - 14 - 40 - GREYS.length * 4;
  const runs = Math.floor((pixelBytes - END_OF_BITMAP.length) / 2);
  const stream = new Uint8Array(runs * 2 + END_OF_BITMAP.length);
  for (let run = 0; run < runs; run++) {
    stream[run * 2] = 255;
    stream[run * 2 + 1] = run & 0xff;
  }
  stream.set(END_OF_BITMAP, runs * 2);
  return buildBmp({
    headerSize: 40,
    width,
    height,
    bitsPerPixel: 8,
    compression: RLE8,
    palette: GREYS,
    pixelData: stream,
  });
}
