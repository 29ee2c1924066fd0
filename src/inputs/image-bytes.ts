import { checkBase64Payload, decodeBase64Head } from './decode-data-url.js';

/** An input image's bytes as the checks read them: its length, its head, and all of it. */
export interface ImageBytes {
  readonly length: number;
  /** At least the first `byteCount` bytes, or all of them when there are fewer. */
  head(byteCount: number): Buffer;
  /** All the bytes; the same Buffer on every call. */
  all(): Buffer;
}

/** Bytes already in memory (fetched or read from storage). */
export function bytesInMemory(bytes: Buffer): ImageBytes {
  return { length: bytes.length, head: () => bytes, all: () => bytes };
}

/**
 * The bytes of a data URL's base64 payload, checked strictly at once (throwing InvalidImage
 * naming `path`) but decoded only as far as asked: a header needs a few kilobytes, and all of
 * it is decoded once, on the first call of `all`.
 */
export function bytesOfBase64(base64: string, path: string, maxBytes: number): ImageBytes {
  const length = checkBase64Payload(base64, path, maxBytes);
  let decoded: Buffer | undefined;
  return {
    length,
    head: (byteCount) => decodeBase64Head(base64, byteCount),
    all: () => (decoded ??= Buffer.from(base64, 'base64')),
  };
}
