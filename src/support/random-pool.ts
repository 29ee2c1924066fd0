import { randomFillSync } from 'node:crypto';

/**
 * Random bytes from the system's cryptographic generator, drawn 4 KiB at a time: one call into
 * it for hundreds of ids instead of one per id (a `randomBytes` call costs some 2.5 µs, most of
 * it the call itself). Each byte is handed out once and never kept by the pool afterwards.
 */
const pool = Buffer.alloc(4096);
let offset = pool.length;

function reserve(count: number): number {
  if (offset + count > pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const start = offset;
  offset += count;
  return start;
}

/** `count` (at most 4096) fresh random bytes copied into `target` at `targetStart`. */
export function copyRandomBytes(target: Buffer, targetStart: number, count: number): void {
  const start = reserve(count);
  pool.copy(target, targetStart, start, start + count);
}

/** `count` (at most 4096) fresh random bytes in base64url, without padding. */
export function randomBase64Url(count: number): string {
  const start = reserve(count);
  return pool.toString('base64url', start, start + count);
}
