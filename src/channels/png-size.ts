import type { PixelSize } from '../domain/generation-request.js';

export const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

export function isPng(bytes: Buffer): boolean {
  return bytes.length >= PNG_SIGNATURE.length && bytes.subarray(0, 8).equals(PNG_SIGNATURE);
}

/** Width and height from a PNG's IHDR chunk, which the format requires to come first. */
export function pngSize(bytes: Buffer): PixelSize | undefined {
  if (bytes.length < 24 || !isPng(bytes) || bytes.toString('latin1', 12, 16) !== 'IHDR')
    return undefined;
  const width = bytes.readUInt32BE(16);
  const height = bytes.readUInt32BE(20);
  return width > 0 && height > 0 ? { width, height } : undefined;
}
