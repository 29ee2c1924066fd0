import { HeaderReader } from './header-reader.js';
import type { ImageHeader } from './image-header.js';

const RIFF_HEADER_LENGTH = 8;
const FIRST_CHUNK_AT = 12;
const CHUNK_DATA_AT = 20;
const VP8_START_CODE = [0x9d, 0x01, 0x2a] as const;
const VP8L_SIGNATURE = 0x2f;
const FOURTEEN_BITS = 0x3fff;

/** Reads the first chunk after `RIFF....WEBP`: lossy VP8, lossless VP8L or extended VP8X. */
export function readWebpHeader(bytes: Buffer, totalLength = bytes.length): ImageHeader {
  const reader = new HeaderReader(bytes, 'WEBP', totalLength);
  if (reader.uint32LE(4) + RIFF_HEADER_LENGTH > reader.length) throw reader.truncated();
  const chunkType = reader.ascii(FIRST_CHUNK_AT, 4);
  const dimensions = (width: number, height: number): ImageHeader => ({
    format: 'webp',
    width,
    height,
  });

  switch (chunkType) {
    case 'VP8 ': {
      const isKeyFrame = (reader.uint8(CHUNK_DATA_AT) & 1) === 0;
      const startCodeAt = CHUNK_DATA_AT + 3;
      const hasStartCode = VP8_START_CODE.every(
        (byte, index) => reader.uint8(startCodeAt + index) === byte,
      );
      if (!isKeyFrame || !hasStartCode) throw reader.corrupt('VP8 frame without a key frame');
      const width = reader.uint16LE(startCodeAt + 3) & FOURTEEN_BITS;
      const height = reader.uint16LE(startCodeAt + 5) & FOURTEEN_BITS;
      if (width === 0 || height === 0)
        throw reader.corrupt(`impossible dimensions ${width}*${height}`);
      return dimensions(width, height);
    }
    case 'VP8L': {
      if (reader.uint8(CHUNK_DATA_AT) !== VP8L_SIGNATURE) throw reader.corrupt('VP8L signature');
      const bits = reader.uint32LE(CHUNK_DATA_AT + 1);
      if (bits >>> 29 !== 0) throw reader.corrupt('VP8L version');
      return dimensions((bits & FOURTEEN_BITS) + 1, ((bits >>> 14) & FOURTEEN_BITS) + 1);
    }
    case 'VP8X': {
      const canvasAt = CHUNK_DATA_AT + 4;
      return dimensions(reader.uint24LE(canvasAt) + 1, reader.uint24LE(canvasAt + 3) + 1);
    }
    default:
      throw reader.corrupt(`unknown first chunk ${JSON.stringify(chunkType)}`);
  }
}
