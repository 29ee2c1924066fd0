import { HeaderReader } from './header-reader.js';
import { type ImageHeader, ImageHeaderError } from './image-header.js';

const FILE_HEADER_LENGTH = 14;
const PIXEL_DATA_OFFSET_AT = 10;
/** BITMAPCOREHEADER (and OS/2 1.x): 16-bit unsigned width and height. */
const CORE_HEADER_LENGTH = 12;
/**
 * Headers with 32-bit signed width and height: BITMAPINFOHEADER (40), the V2/V3 info headers
 * (52, 56), OS/2 2.x (64), BITMAPV4HEADER (108) and BITMAPV5HEADER (124).
 */
const INFO_HEADER_LENGTHS: ReadonlySet<number> = new Set([40, 52, 56, 64, 108, 124]);
const BITS_PER_PIXEL: ReadonlySet<number> = new Set([1, 4, 8, 16, 24, 32]);

const Compression = { rgb: 0, rle8: 1, rle4: 2, bitFields: 3, jpeg: 4, png: 5, alphaBitFields: 6 };

/** The combinations a BMP decoder must handle; anything else is refused before any cost. */
function compressionFits(compression: number, bitsPerPixel: number): boolean {
  switch (compression) {
    case Compression.rgb:
      return true;
    case Compression.rle8:
      return bitsPerPixel === 8;
    case Compression.rle4:
      return bitsPerPixel === 4;
    case Compression.bitFields:
    case Compression.alphaBitFields:
      return bitsPerPixel === 16 || bitsPerPixel === 32;
    default:
      return false;
  }
}

/** Reads the file header and DIB header; a negative height means rows are stored top-down. */
export function readBmpHeader(bytes: Buffer, totalLength = bytes.length): ImageHeader {
  const reader = new HeaderReader(bytes, 'BMP', totalLength);
  const dibHeaderLength = reader.uint32LE(FILE_HEADER_LENGTH);
  const isCore = dibHeaderLength === CORE_HEADER_LENGTH;
  if (!isCore && !INFO_HEADER_LENGTHS.has(dibHeaderLength)) {
    throw reader.corrupt(`unknown DIB header of ${dibHeaderLength} bytes`);
  }
  if (!reader.has(FILE_HEADER_LENGTH, dibHeaderLength)) throw reader.truncated();
  const at = FILE_HEADER_LENGTH + 4;

  const width = isCore ? reader.uint16LE(at) : reader.int32LE(at);
  const signedHeight = isCore ? reader.uint16LE(at + 2) : reader.int32LE(at + 4);
  const planes = reader.uint16LE(isCore ? at + 4 : at + 8);
  const bitsPerPixel = reader.uint16LE(isCore ? at + 6 : at + 10);
  const compression = isCore ? Compression.rgb : reader.uint32LE(at + 12);

  if (width <= 0 || signedHeight === 0) {
    throw reader.corrupt(`impossible dimensions ${width}*${signedHeight}`);
  }
  if (planes !== 1) throw reader.corrupt(`${planes} colour planes`);
  if (!BITS_PER_PIXEL.has(bitsPerPixel)) throw reader.corrupt(`${bitsPerPixel} bits per pixel`);
  if (compression === Compression.jpeg || compression === Compression.png) {
    throw new ImageHeaderError('BMP with embedded JPEG or PNG data is not supported');
  }
  if (!compressionFits(compression, bitsPerPixel)) {
    throw reader.corrupt(`compression ${compression} with ${bitsPerPixel} bits per pixel`);
  }
  const isRunLength = compression === Compression.rle8 || compression === Compression.rle4;
  if (isRunLength && signedHeight < 0) throw reader.corrupt('top-down rows with RLE compression');
  if (reader.uint32LE(PIXEL_DATA_OFFSET_AT) >= reader.length) throw reader.truncated();
  return { format: 'bmp', width, height: Math.abs(signedHeight) };
}
