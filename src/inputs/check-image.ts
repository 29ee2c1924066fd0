import type { LoadedImage } from '../domain/loaded-image.js';
import { type ImageHeader, ImageHeaderError } from './image-header.js';
import { MAX_ASPECT_RATIO, MAX_SIDE_PIXELS, MIN_SIDE_PIXELS } from './image-limits.js';
import { imageTooLarge, invalidImage } from './input-errors.js';
import { sniffImageHeader } from './sniff-format.js';

function readHeader(bytes: Buffer, path: string): ImageHeader {
  try {
    return sniffImageHeader(bytes);
  } catch (error) {
    if (error instanceof ImageHeaderError) throw invalidImage(path, error.message);
    throw error;
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
 * Accepts the bytes of one input image or throws InvalidImage naming `path`: size, then format
 * (from the bytes), dimensions and aspect ratio, all read from the header without decoding.
 */
export function checkImage(bytes: Buffer, path: string, maxBytes: number): LoadedImage {
  if (bytes.length > maxBytes) throw imageTooLarge(path, maxBytes, `got ${bytes.length} bytes`);
  const { format, width, height } = readHeader(bytes, path);
  checkSide(path, 'width', width);
  checkSide(path, 'height', height);
  if (width > MAX_ASPECT_RATIO * height || height > MAX_ASPECT_RATIO * width) {
    throw invalidImage(
      path,
      `aspect ratio ${width}:${height} is outside [1:${MAX_ASPECT_RATIO}, ${MAX_ASPECT_RATIO}:1]`,
    );
  }
  return { path, format, width, height, bytes };
}
