import { imageTooLarge, invalidUrl } from './input-errors.js';

/**
 * Reads a response body into one Buffer, refusing it as soon as it passes `maxBytes`. With a
 * Content-Length (already checked against the limit) the buffer is allocated once at that size,
 * so a large image is never held twice.
 */
export async function readLimitedBody(
  body: AsyncIterable<Uint8Array>,
  declaredLength: number | undefined,
  maxBytes: number,
  path: string,
): Promise<Buffer> {
  if (declaredLength !== undefined) {
    const bytes = Buffer.allocUnsafe(declaredLength);
    let received = 0;
    for await (const chunk of body) {
      if (received + chunk.length > declaredLength) {
        throw invalidUrl(path, 'the server sent more bytes than its Content-Length');
      }
      bytes.set(chunk, received);
      received += chunk.length;
    }
    if (received !== declaredLength) {
      throw invalidUrl(path, `the response ended after ${received} of ${declaredLength} bytes`);
    }
    return bytes;
  }

  const chunks: Uint8Array[] = [];
  let received = 0;
  for await (const chunk of body) {
    received += chunk.length;
    if (received > maxBytes) {
      throw imageTooLarge(path, maxBytes, `the response passed ${maxBytes} bytes while streaming`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, received);
}
