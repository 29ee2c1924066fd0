import { HeaderReader } from './header-reader.js';
import { type ImageHeader, ImageHeaderError } from './image-header.js';

export const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

export function isPng(bytes: Buffer): boolean {
  return bytes.subarray(0, PNG_SIGNATURE.length).equals(PNG_SIGNATURE);
}

const IHDR_OFFSET = PNG_SIGNATURE.length;
const IHDR_DATA_LENGTH = 13;
/** Chunk length, type and CRC around the data. */
const CHUNK_OVERHEAD = 12;
const MAX_CHUNK_LENGTH = 0x7fffffff;

const GREYSCALE_WITH_ALPHA = 4;
const TRUECOLOUR_WITH_ALPHA = 6;
const BIT_DEPTHS_BY_COLOUR_TYPE: ReadonlyMap<number, readonly number[]> = new Map([
  [0, [1, 2, 4, 8, 16]],
  [2, [8, 16]],
  [3, [1, 2, 4, 8]],
  [GREYSCALE_WITH_ALPHA, [8, 16]],
  [TRUECOLOUR_WITH_ALPHA, [8, 16]],
]);

/**
 * Reads IHDR and walks the chunks up to the first IDAT: transparency can only be declared there,
 * by an alpha colour type or a `tRNS` chunk, and either makes the image unacceptable.
 */
export function readPngHeader(bytes: Buffer, totalLength = bytes.length): ImageHeader {
  const reader = new HeaderReader(bytes, 'PNG', totalLength);
  if (
    reader.uint32BE(IHDR_OFFSET) !== IHDR_DATA_LENGTH ||
    reader.ascii(IHDR_OFFSET + 4, 4) !== 'IHDR'
  ) {
    throw reader.corrupt('the first chunk is not IHDR');
  }
  const dataStart = IHDR_OFFSET + 8;
  const width = reader.uint32BE(dataStart);
  const height = reader.uint32BE(dataStart + 4);
  const bitDepth = reader.uint8(dataStart + 8);
  const colourType = reader.uint8(dataStart + 9);
  if (width === 0 || height === 0 || width > MAX_CHUNK_LENGTH || height > MAX_CHUNK_LENGTH) {
    throw reader.corrupt(`impossible dimensions ${width}*${height}`);
  }
  const allowedDepths = BIT_DEPTHS_BY_COLOUR_TYPE.get(colourType);
  if (allowedDepths === undefined || !allowedDepths.includes(bitDepth)) {
    throw reader.corrupt(`colour type ${colourType} with bit depth ${bitDepth}`);
  }
  if (colourType === GREYSCALE_WITH_ALPHA || colourType === TRUECOLOUR_WITH_ALPHA) {
    throw new ImageHeaderError('PNG with alpha channel is not supported');
  }

  let offset = IHDR_OFFSET + CHUNK_OVERHEAD + IHDR_DATA_LENGTH;
  for (;;) {
    const length = reader.uint32BE(offset);
    const type = reader.ascii(offset + 4, 4);
    if (length > MAX_CHUNK_LENGTH) throw reader.corrupt(`chunk ${type} is too long`);
    if (type === 'IDAT') return { format: 'png', width, height };
    if (type === 'tRNS') {
      throw new ImageHeaderError('PNG with transparency (tRNS chunk) is not supported');
    }
    if (type === 'IEND') throw reader.corrupt('no image data (IDAT) before IEND');
    offset += CHUNK_OVERHEAD + length;
  }
}
