/**
 * A BMP decoder, because sharp's libvips build reads no BMP. Covers what Windows and common
 * tools write: core and info headers (V1 to V5), 1/4/8-bit palettes, RLE4 and RLE8, 16/24/32-bit
 * with default or bit-field masks, bottom-up and top-down rows. Alpha, if any, is dropped.
 */

export interface DecodedBitmap {
  width: number;
  height: number;
  /** RGB, 3 bytes a pixel, top row first. */
  data: Uint8Array;
}

export class BmpDecodeError extends Error {
  constructor(problem: string) {
    super(`BMP ${problem}`);
    this.name = 'BmpDecodeError';
  }
}

const FILE_HEADER_SIZE = 14;
const CORE_HEADER_SIZE = 12;
const INFO_HEADER_SIZE = 40;
const MAX_SIDE = 32_768;

const Compression = { rgb: 0, rle8: 1, rle4: 2, bitFields: 3, alphaBitFields: 6 } as const;

interface Header {
  width: number;
  height: number;
  topDown: boolean;
  bitsPerPixel: number;
  compression: number;
  pixelOffset: number;
  palette: Uint8Array;
  masks: readonly [number, number, number];
}

export function decodeBmp(bytes: Uint8Array): DecodedBitmap {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const header = readHeader(bytes, view);
  const { width, height, bitsPerPixel, compression } = header;
  const output = new Uint8Array(width * height * 3);
  if (compression === Compression.rle8 || compression === Compression.rle4) {
    decodeRle(bytes, header, output);
  } else if (bitsPerPixel <= 8) {
    decodeIndexed(bytes, header, output);
  } else if (bitsPerPixel === 24) {
    decodeBgr(bytes, header, output);
  } else {
    decodeMasked(view, header, output);
  }
  return { width, height, data: output };
}

function readHeader(bytes: Uint8Array, view: DataView): Header {
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

  // Bit-field masks follow a 40-byte header, or sit inside the larger ones at the same offset.
  const hasMasks =
    compression === Compression.bitFields || compression === Compression.alphaBitFields;
  const masksAfterHeader =
    hasMasks && headerSize === INFO_HEADER_SIZE
      ? compression === Compression.alphaBitFields
        ? 16
        : 12
      : 0;
  let masks: readonly [number, number, number];
  if (hasMasks) {
    if (bytes.length < FILE_HEADER_SIZE + INFO_HEADER_SIZE + 12)
      throw new BmpDecodeError('masks truncated');
    masks = [view.getUint32(54, true), view.getUint32(58, true), view.getUint32(62, true)];
  } else {
    masks = bitsPerPixel === 16 ? [0x7c00, 0x03e0, 0x001f] : [0xff0000, 0x00ff00, 0x0000ff];
  }

  let palette = new Uint8Array(0);
  if (bitsPerPixel <= 8) {
    const entrySize = core ? 3 : 4;
    const maxEntries = 1 << bitsPerPixel;
    const entries = Math.min(maxEntries, coloursUsed === 0 ? maxEntries : coloursUsed);
    const start = FILE_HEADER_SIZE + headerSize + masksAfterHeader;
    const available = Math.floor(
      Math.max(0, Math.min(pixelOffset, bytes.length) - start) / entrySize,
    );
    const count = Math.min(entries, available);
    if (count === 0) throw new BmpDecodeError('palette missing');
    // RGB triples, full size so that out-of-range indices read black instead of failing.
    palette = new Uint8Array(maxEntries * 3);
    for (let entry = 0; entry < count; entry++) {
      const at = start + entry * entrySize;
      palette[entry * 3] = bytes[at + 2]!;
      palette[entry * 3 + 1] = bytes[at + 1]!;
      palette[entry * 3 + 2] = bytes[at]!;
    }
  }
  if (pixelOffset >= bytes.length) throw new BmpDecodeError('pixel data missing');
  return { width, height, topDown, bitsPerPixel, compression, pixelOffset, palette, masks };
}

function rowStride(header: Header): number {
  return Math.ceil((header.width * header.bitsPerPixel) / 32) * 4;
}

/** Where stored row `row` (0 = first in the file) starts in the file, checked to fit. */
function rowStart(bytes: Uint8Array, header: Header, row: number): number {
  const stride = rowStride(header);
  const start = header.pixelOffset + row * stride;
  const needed = Math.ceil((header.width * header.bitsPerPixel) / 8);
  if (start + needed > bytes.length) throw new BmpDecodeError('pixel data truncated');
  return start;
}

function outputRow(header: Header, storedRow: number): number {
  return header.topDown ? storedRow : header.height - 1 - storedRow;
}

function decodeIndexed(bytes: Uint8Array, header: Header, output: Uint8Array): void {
  const { width, height, bitsPerPixel, palette } = header;
  const perByte = 8 / bitsPerPixel;
  const mask = (1 << bitsPerPixel) - 1;
  for (let row = 0; row < height; row++) {
    const start = rowStart(bytes, header, row);
    let target = outputRow(header, row) * width * 3;
    for (let x = 0; x < width; x++, target += 3) {
      const byte = bytes[start + Math.floor(x / perByte)]!;
      const shift = 8 - bitsPerPixel * ((x % perByte) + 1);
      const index = ((byte >> shift) & mask) * 3;
      output[target] = palette[index]!;
      output[target + 1] = palette[index + 1]!;
      output[target + 2] = palette[index + 2]!;
    }
  }
}

function decodeBgr(bytes: Uint8Array, header: Header, output: Uint8Array): void {
  const { width, height } = header;
  for (let row = 0; row < height; row++) {
    let source = rowStart(bytes, header, row);
    let target = outputRow(header, row) * width * 3;
    for (let x = 0; x < width; x++, source += 3, target += 3) {
      output[target] = bytes[source + 2]!;
      output[target + 1] = bytes[source + 1]!;
      output[target + 2] = bytes[source]!;
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

function decodeMasked(view: DataView, header: Header, output: Uint8Array): void {
  const { width, height, bitsPerPixel } = header;
  const [red, green, blue] = header.masks.map(channelOf) as [Channel, Channel, Channel];
  const bytesPerPixel = bitsPerPixel / 8;
  const bytes = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
  const field = (pixel: number, channel: Channel) =>
    Math.round((((pixel & channel.mask) >>> 0) >>> channel.shift) * channel.scale);
  for (let row = 0; row < height; row++) {
    let source = rowStart(bytes, header, row);
    let target = outputRow(header, row) * width * 3;
    for (let x = 0; x < width; x++, source += bytesPerPixel, target += 3) {
      const pixel =
        bytesPerPixel === 2 ? view.getUint16(source, true) : view.getUint32(source, true);
      output[target] = field(pixel, red);
      output[target + 1] = field(pixel, green);
      output[target + 2] = field(pixel, blue);
    }
  }
}

/** RLE8 and RLE4 (always bottom-up). Pixels the stream skips keep palette entry 0. */
function decodeRle(bytes: Uint8Array, header: Header, output: Uint8Array): void {
  const { width, height, palette } = header;
  const four = header.compression === Compression.rle4;
  const put = (x: number, row: number, index: number) => {
    if (x >= width || row >= height) return;
    const target = ((height - 1 - row) * width + x) * 3;
    output[target] = palette[index * 3]!;
    output[target + 1] = palette[index * 3 + 1]!;
    output[target + 2] = palette[index * 3 + 2]!;
  };
  for (let pixel = 0; pixel < width * height; pixel++) {
    output[pixel * 3] = palette[0]!;
    output[pixel * 3 + 1] = palette[1]!;
    output[pixel * 3 + 2] = palette[2]!;
  }
  let at = header.pixelOffset;
  let x = 0;
  let row = 0;
  const read = () => {
    if (at >= bytes.length) throw new BmpDecodeError('RLE data truncated');
    return bytes[at++]!;
  };
  while (row < height) {
    const count = read();
    const value = read();
    if (count > 0) {
      for (let i = 0; i < count; i++, x++) {
        put(x, row, four ? (i % 2 === 0 ? value >> 4 : value & 0x0f) : value);
      }
    } else if (value === 0) {
      x = 0;
      row++;
    } else if (value === 1) {
      return;
    } else if (value === 2) {
      x += read();
      row += read();
    } else {
      const run = value;
      const runBytes = four ? Math.ceil(run / 2) : run;
      for (let i = 0; i < run; i++, x++) {
        const byte = bytes[at + (four ? i >> 1 : i)];
        if (byte === undefined) throw new BmpDecodeError('RLE data truncated');
        put(x, row, four ? (i % 2 === 0 ? byte >> 4 : byte & 0x0f) : byte);
      }
      at += runBytes + (runBytes % 2);
    }
  }
}
