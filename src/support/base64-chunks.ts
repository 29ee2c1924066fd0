/**
 * Base64 of a byte stream, chunk by chunk: each chunk is encoded as it arrives, with the 0-2
 * bytes that do not fill a group of 3 carried into the next, so the text of a whole file is
 * never held at once. The concatenated output equals `Buffer.concat(chunks).toString('base64')`.
 */
export async function* base64Chunks(bytes: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  let carried: Buffer = Buffer.alloc(0);
  for await (const chunk of bytes) {
    const joined =
      carried.length === 0
        ? Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
        : Buffer.concat([carried, chunk]);
    const whole = joined.length - (joined.length % 3);
    if (whole > 0) yield joined.toString('base64', 0, whole);
    carried = joined.subarray(whole);
  }
  if (carried.length > 0) yield carried.toString('base64');
}
