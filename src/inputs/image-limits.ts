/** The input image rules of docs/api.md §2.6. "20 MB" is read as 20 MiB, 20 * 1024 * 1024 bytes. */
export const MIN_SIDE_PIXELS = 240;
export const MAX_SIDE_PIXELS = 8000;
/** Longest side over shortest side, at most 8 (aspect ratio 1:8 to 8:1). */
export const MAX_ASPECT_RATIO = 8;
export const DEFAULT_MAX_IMAGE_BYTES = 20 * 1024 * 1024;

export const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;
export const DEFAULT_TOTAL_TIMEOUT_MS = 20_000;
export const DEFAULT_MAX_REDIRECTS = 3;

export function describeByteLimit(maxBytes: number): string {
  const mebibytes = maxBytes / (1024 * 1024);
  return Number.isInteger(mebibytes) ? `${mebibytes} MB` : `${maxBytes} bytes`;
}
