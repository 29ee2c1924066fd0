import type { PixelSize } from '../domain/generation-request.js';
import { isPng } from '../inputs/read-png-header.js';

/** Width and height from a PNG's IHDR chunk, which the format requires to come first. */
export function pngSize(bytes: Buffer): PixelSize | undefined {
  if (bytes.length < 24 || !isPng(bytes) || bytes.toString('latin1', 12, 16) !== 'IHDR')
    return undefined;
  const width = bytes.readUInt32BE(16);
  const height = bytes.readUInt32BE(20);
  return width > 0 && height > 0 ? { width, height } : undefined;
}
