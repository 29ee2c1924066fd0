import type { PixelSize } from '../domain/generation-request.js';

const CUSTOM_SIZE = /^([1-9][0-9]{0,8})\*([1-9][0-9]{0,8})$/;
export const MAX_ASPECT = 8;

/** Parses `<width>*<height>`; undefined when the text is not of that form. */
export function parseCustomSize(text: string): PixelSize | undefined {
  const match = CUSTOM_SIZE.exec(text);
  if (match === null) return undefined;
  return { width: Number(match[1]), height: Number(match[2]) };
}

/**
 * Checks a custom size against a pixel-total range and the 1:8 to 8:1 aspect ratio, in integers.
 * Returns the problem in words, or undefined when the size is allowed.
 */
export function customSizeProblem(
  size: PixelSize,
  minSide: number,
  maxSide: number,
  context: string,
): string | undefined {
  const total = size.width * size.height;
  if (total < minSide * minSide || total > maxSide * maxSide) {
    return `total pixels must be between ${minSide}*${minSide} and ${maxSide}*${maxSide}${context}, got ${size.width}*${size.height}`;
  }
  const long = Math.max(size.width, size.height);
  const short = Math.min(size.width, size.height);
  if (long > MAX_ASPECT * short) {
    return `aspect ratio must be between 1:8 and 8:1, got ${size.width}*${size.height}`;
  }
  return undefined;
}
