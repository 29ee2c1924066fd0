import type { ImageFormat } from '../domain/loaded-image.js';

/** What the header of an image says, read without decoding any pixels. */
export interface ImageHeader {
  format: ImageFormat;
  width: number;
  height: number;
}

/**
 * A header that cannot be accepted. The message is safe to show the caller and names no path;
 * check-image adds the path and turns it into an InvalidImage.
 */
export class ImageHeaderError extends Error {
  constructor(problem: string) {
    super(problem);
    this.name = 'ImageHeaderError';
  }
}

/**
 * The header reaches past the bytes decoded so far (the image itself is long enough): the reader
 * asks again with at least `needed` bytes. Never reaches a caller of checkImage.
 */
export class HeadTooShort extends Error {
  constructor(readonly needed: number) {
    super(`the header needs the first ${needed} bytes`);
    this.name = 'HeadTooShort';
  }
}
