/**
 * A copy of `bytes` in shared memory. Several worker tasks read the same input image or decoded
 * base picture; shared memory lets each of them see it without another copy per task.
 */
export function sharedCopy(bytes: Uint8Array): Uint8Array {
  const shared = new Uint8Array(new SharedArrayBuffer(bytes.byteLength));
  shared.set(bytes);
  return shared;
}

/**
 * An ArrayBuffer holding exactly `bytes`, safe to transfer: a Buffer may be a slice of a larger
 * pool that other Buffers still use, and transferring that would empty them too.
 */
export function ownedArrayBuffer(bytes: Uint8Array): ArrayBuffer {
  const { buffer, byteOffset, byteLength } = bytes;
  if (buffer instanceof ArrayBuffer && byteOffset === 0 && byteLength === buffer.byteLength) {
    return buffer;
  }
  return bytes.slice().buffer;
}

/** A Buffer over the same memory (a typed array that crossed threads arrives as a Uint8Array). */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
