import { type ImageHeader, ImageHeaderError } from './image-header.js';
import { readBmpHeader } from './read-bmp-header.js';
import { readJpegHeader } from './read-jpeg-header.js';
import { PNG_SIGNATURE, readPngHeader } from './read-png-header.js';
import { readWebpHeader } from './read-webp-header.js';

function startsWithAscii(bytes: Buffer, offset: number, text: string): boolean {
  return (
    bytes.length >= offset + text.length &&
    bytes.toString('latin1', offset, offset + text.length) === text
  );
}

function isJpeg(bytes: Buffer): boolean {
  return bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff;
}

/**
 * Tells the format from the leading bytes, never from a declared MIME type or file name, and
 * reads that format's header. Throws ImageHeaderError for anything else or a broken header.
 * `bytes` may be the head of a longer image of `totalLength` bytes (then at least its first 12
 * bytes, which tell the format); HeadTooShort asks for more.
 */
export function sniffImageHeader(bytes: Buffer, totalLength = bytes.length): ImageHeader {
  if (bytes.subarray(0, PNG_SIGNATURE.length).equals(PNG_SIGNATURE)) {
    return readPngHeader(bytes, totalLength);
  }
  if (isJpeg(bytes)) return readJpegHeader(bytes, totalLength);
  if (startsWithAscii(bytes, 0, 'RIFF') && startsWithAscii(bytes, 8, 'WEBP')) {
    return readWebpHeader(bytes, totalLength);
  }
  if (startsWithAscii(bytes, 0, 'BM')) return readBmpHeader(bytes, totalLength);
  throw new ImageHeaderError('unsupported image format; use JPEG, PNG, BMP or WEBP');
}
