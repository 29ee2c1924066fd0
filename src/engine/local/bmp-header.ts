import { BmpDecodeError } from './bmp-decode-error.js';

const FILE_HEADER_SIZE = 14;
const CORE_HEADER_SIZE = 12;
const INFO_HEADER_SIZE = 40;
const MAX_SIDE = 32_768;

export const Compression = { rgb: 0, rle8: 1, rle4: 2, bitFields: 3, alphaBitFields: 6 } as const;

export interface BmpHeader {
  width: number;
  height: number;
  topDown: boolean;
  bitsPerPixel: number;
  compression: number;
  pixelOffset: number;
  /** RGB triples, all 2^bitsPerPixel entries (unlisted ones black); empty above 8 bits. */
  palette: Uint8Array;
  masks: readonly [number, number, number];
}

export function isRunLength(header: BmpHeader): boolean {
  return header.compression === Compression.rle8 || header.compression === Compression.rle4;
}

/** The file and DIB headers, the bit-field masks and the palette, checked for what the decoder reads. */
export function parseBmpHeader(bytes: Uint8Array, view: DataView): BmpHeader {
  if (
    bytes.length < FILE_HEADER_SIZE + CORE_HEADER_SIZE ||
    bytes[0] !== 0x42 ||
    bytes[1] !== 0x4d
  ) {
    throw new BmpDecodeError('signature missing or file too short');
  }
  const pixelOffset = view.getUint32(10, true);
  const headerSize = view.getUint32(14, true);
  const core = headerSize === CORE_HEADER_SIZE;
  if (!core && headerSize < INFO_HEADER_SIZE) {
    throw new BmpDecodeError(`header size ${headerSize} is not supported`);
  }
  if (bytes.length < FILE_HEADER_SIZE + headerSize) throw new BmpDecodeError('header truncated');
  const width = core ? view.getUint16(18, true) : view.getInt32(18, true);
  const signedHeight = core ? view.getUint16(20, true) : view.getInt32(22, true);
  const bitsPerPixel = view.getUint16(core ? 24 : 28, true);
  const compression = core ? Compression.rgb : view.getUint32(30, true);
  const coloursUsed = core ? 0 : view.getUint32(46, true);
  const height = Math.abs(signedHeight);
  if (width <= 0 || height <= 0 || width > MAX_SIDE || height > MAX_SIDE) {
    throw new BmpDecodeError(`dimensions ${width}x${signedHeight} are not supported`);
  }
  if (![1, 4, 8, 16, 24, 32].includes(bitsPerPixel)) {
    throw new BmpDecodeError(`${bitsPerPixel} bits per pixel is not supported`);
  }
  const compressionFits =
    compression === Compression.rgb ||
    (compression === Compression.rle8 && bitsPerPixel === 8) ||
    (compression === Compression.rle4 && bitsPerPixel === 4) ||
    ((compression === Compression.bitFields || compression === Compression.alphaBitFields) &&
      (bitsPerPixel === 16 || bitsPerPixel === 32));
  if (!compressionFits) {
    throw new BmpDecodeError(
      `compression ${compression} with ${bitsPerPixel} bits per pixel is not supported`,
    );
  }
  const topDown = !core && signedHeight < 0;
  if (topDown && (compression === Compression.rle8 || compression === Compression.rle4)) {
    throw new BmpDecodeError('top-down RLE is not allowed');
  }

  const masks = readMasks(bytes, view, compression, bitsPerPixel);
  // Bit-field masks follow a 40-byte header, or sit inside the larger ones at the same offset.
  const masksAfterHeader =
    headerSize === INFO_HEADER_SIZE && hasMasks(compression)
      ? compression === Compression.alphaBitFields
        ? 16
        : 12
      : 0;
  const palette =
    bitsPerPixel <= 8
      ? readPalette(bytes, {
          start: FILE_HEADER_SIZE + headerSize + masksAfterHeader,
          end: pixelOffset,
          entrySize: core ? 3 : 4,
          bitsPerPixel,
          coloursUsed,
        })
      : new Uint8Array(0);
  if (pixelOffset >= bytes.length) throw new BmpDecodeError('pixel data missing');
  return { width, height, topDown, bitsPerPixel, compression, pixelOffset, palette, masks };
}

function hasMasks(compression: number): boolean {
  return compression === Compression.bitFields || compression === Compression.alphaBitFields;
}

/** The red, green and blue masks: read from the file for bit fields, the defaults otherwise. */
function readMasks(
  bytes: Uint8Array,
  view: DataView,
  compression: number,
  bitsPerPixel: number,
): readonly [number, number, number] {
  if (!hasMasks(compression))
    return bitsPerPixel === 16 ? [0x7c00, 0x03e0, 0x001f] : [0xff0000, 0x00ff00, 0x0000ff];
  if (bytes.length < FILE_HEADER_SIZE + INFO_HEADER_SIZE + 12)
    throw new BmpDecodeError('masks truncated');
  return [view.getUint32(54, true), view.getUint32(58, true), view.getUint32(62, true)];
}

/**
 * The palette between `start` and the pixels, as RGB triples: all 2^bitsPerPixel entries, so that
 * out-of-range indices read black instead of failing.
 */
function readPalette(
  bytes: Uint8Array,
  at: { start: number; end: number; entrySize: number; bitsPerPixel: number; coloursUsed: number },
): Uint8Array {
  const maxEntries = 1 << at.bitsPerPixel;
  const entries = Math.min(maxEntries, at.coloursUsed === 0 ? maxEntries : at.coloursUsed);
  const available = Math.floor(
    Math.max(0, Math.min(at.end, bytes.length) - at.start) / at.entrySize,
  );
  const count = Math.min(entries, available);
  if (count === 0) throw new BmpDecodeError('palette missing');
  const palette = new Uint8Array(maxEntries * 3);
  for (let entry = 0; entry < count; entry++) {
    const offset = at.start + entry * at.entrySize;
    palette[entry * 3] = bytes[offset + 2]!;
    palette[entry * 3 + 1] = bytes[offset + 1]!;
    palette[entry * 3 + 2] = bytes[offset]!;
  }
  return palette;
}
