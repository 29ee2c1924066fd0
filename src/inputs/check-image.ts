import type { LoadedImage } from '../domain/loaded-image.js';
import { HeadTooShort, type ImageHeader, ImageHeaderError } from './image-header.js';
import type { ImageBytes } from './image-bytes.js';
import { MAX_ASPECT_RATIO, MAX_SIDE_PIXELS, MIN_SIDE_PIXELS } from './image-limits.js';
import { imageTooLarge, invalidImage } from './input-errors.js';
import { sniffImageHeader } from './sniff-format.js';

/** Enough for the headers of nearly every image; a header reaching further asks for more. */
const FIRST_HEAD_BYTES = 64 * 1024;

function readHeader(image: ImageBytes, path: string): ImageHeader {
  let headBytes = FIRST_HEAD_BYTES;
  for (;;) {
    try {
      return sniffImageHeader(image.head(headBytes), image.length);
    } catch (error) {
      if (error instanceof HeadTooShort) {
        // Doubling keeps the bytes decoded over all tries under twice what the header needs.
        headBytes = Math.max(headBytes * 2, error.needed);
        continue;
      }
      if (error instanceof ImageHeaderError) throw invalidImage(path, error.message);
      throw error;
    }
  }
}

function checkSide(path: string, name: 'width' | 'height', pixels: number): void {
  if (pixels < MIN_SIDE_PIXELS || pixels > MAX_SIDE_PIXELS) {
    throw invalidImage(
      path,
      `${name} ${pixels} is outside [${MIN_SIDE_PIXELS}, ${MAX_SIDE_PIXELS}] pixels`,
    );
  }
}

/**
 * Accepts one input image or throws InvalidImage naming `path`: size, then format (from the
 * bytes), dimensions and aspect ratio, all read from the header without decoding pixels, and
 * from as few of the bytes as the header needs.
 */
export function checkImage(image: ImageBytes, path: string, maxBytes: number): LoadedImage {
  if (image.length > maxBytes) throw imageTooLarge(path, maxBytes, `got ${image.length} bytes`);
  const { format, width, height } = readHeader(image, path);
  checkSide(path, 'width', width);
  checkSide(path, 'height', height);
  if (width > MAX_ASPECT_RATIO * height || height > MAX_ASPECT_RATIO * width) {
    throw invalidImage(
      path,
      `aspect ratio ${width}:${height} is outside [1:${MAX_ASPECT_RATIO}, ${MAX_ASPECT_RATIO}:1]`,
    );
  }
  return { path, format, width, height, bytes: image.all };
}
