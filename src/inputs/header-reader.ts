import { HeadTooShort, ImageHeaderError } from './image-header.js';

/**
 * Bounds-checked reads from the start of an image. A read past the end throws an
 * ImageHeaderError naming the format, so a truncated file is an InvalidImage, never a RangeError.
 * `bytes` may be only the head of an image of `totalLength` bytes: a read inside the image but
 * past the head throws HeadTooShort, and the caller reads again with a longer head.
 */
export class HeaderReader {
  constructor(
    readonly bytes: Buffer,
    private readonly formatName: string,
    private readonly totalLength: number = bytes.length,
  ) {}

  /** The length of the whole image. */
  get length(): number {
    return this.totalLength;
  }

  has(offset: number, size: number): boolean {
    return offset >= 0 && size >= 0 && offset + size <= this.totalLength;
  }

  truncated(): ImageHeaderError {
    return new ImageHeaderError(`truncated or corrupt ${this.formatName} header`);
  }

  corrupt(detail: string): ImageHeaderError {
    return new ImageHeaderError(`corrupt ${this.formatName} header: ${detail}`);
  }

  uint8(offset: number): number {
    this.require(offset, 1);
    return this.bytes.readUInt8(offset);
  }

  uint16BE(offset: number): number {
    this.require(offset, 2);
    return this.bytes.readUInt16BE(offset);
  }

  uint16LE(offset: number): number {
    this.require(offset, 2);
    return this.bytes.readUInt16LE(offset);
  }

  uint24LE(offset: number): number {
    this.require(offset, 3);
    return this.bytes.readUIntLE(offset, 3);
  }

  uint32BE(offset: number): number {
    this.require(offset, 4);
    return this.bytes.readUInt32BE(offset);
  }

  uint32LE(offset: number): number {
    this.require(offset, 4);
    return this.bytes.readUInt32LE(offset);
  }

  int32LE(offset: number): number {
    this.require(offset, 4);
    return this.bytes.readInt32LE(offset);
  }

  ascii(offset: number, size: number): string {
    this.require(offset, size);
    return this.bytes.toString('latin1', offset, offset + size);
  }

  private require(offset: number, size: number): void {
    if (!this.has(offset, size)) throw this.truncated();
    if (offset + size > this.bytes.length) throw new HeadTooShort(offset + size);
  }
}
