import { HeaderReader } from './header-reader.js';
import { type ImageHeader, ImageHeaderError } from './image-header.js';

const MARKER_PREFIX = 0xff;
const START_OF_IMAGE = 0xd8;
const END_OF_IMAGE = 0xd9;
const START_OF_SCAN = 0xda;
const TEMPORARY = 0x01;

/** SOF0-SOF15 except DHT (C4), JPG (C8) and DAC (CC), which share the range. */
function isStartOfFrame(marker: number): boolean {
  return marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
}

function isStandalone(marker: number): boolean {
  return marker === TEMPORARY || (marker >= 0xd0 && marker <= 0xd7);
}

/** Walks the marker segments after SOI to the first start-of-frame and reads its dimensions. */
export function readJpegHeader(bytes: Buffer, totalLength = bytes.length): ImageHeader {
  const reader = new HeaderReader(bytes, 'JPEG', totalLength);
  let offset = 2;
  for (;;) {
    if (reader.uint8(offset) !== MARKER_PREFIX) throw reader.corrupt('expected a marker');
    while (reader.uint8(offset) === MARKER_PREFIX) offset += 1;
    const marker = reader.uint8(offset);
    offset += 1;
    if (isStandalone(marker)) continue;
    if (marker === 0x00 || marker === START_OF_IMAGE) {
      throw reader.corrupt(`unexpected marker 0x${marker.toString(16)}`);
    }
    if (marker === START_OF_SCAN || marker === END_OF_IMAGE) {
      throw reader.corrupt('no frame header before the image data');
    }
    const segmentLength = reader.uint16BE(offset);
    if (segmentLength < 2) throw reader.corrupt('segment length below 2');
    if (isStartOfFrame(marker)) {
      if (segmentLength < 8) throw reader.corrupt('frame header too short');
      const height = reader.uint16BE(offset + 3);
      const width = reader.uint16BE(offset + 5);
      if (width === 0) throw reader.corrupt('width 0');
      if (height === 0) {
        throw new ImageHeaderError(
          'JPEG whose height is given after the frame header (DNL marker) is not supported',
        );
      }
      return { format: 'jpeg', width, height };
    }
    offset += segmentLength;
  }
}
