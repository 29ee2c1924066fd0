import { Transform, type TransformCallback } from 'node:stream';

/** Counts bytes against a limit: the one place that decides when a limit is passed. */
class ByteBudget {
  private spent = 0;

  constructor(private readonly maxBytes: number) {}

  /** Counts `count` more bytes; false once the total is over the limit. */
  spend(count: number): boolean {
    this.spent += count;
    return this.spent <= this.maxBytes;
  }
}

export type LimitedRead = { kind: 'complete'; bytes: Buffer } | { kind: 'over-limit' };

export interface ReadLimitOptions {
  /**
   * Allocates all `maxBytes` before reading, for a body known to be that long, so that its
   * bytes are never held twice. A shorter body comes back shorter.
   */
  preallocate?: boolean;
}

/**
 * Reads `body` into one Buffer, or stops as soon as it passes `maxBytes` without reading the
 * rest (ending the iteration early destroys a stream).
 */
export async function readLimited(
  body: AsyncIterable<Uint8Array>,
  maxBytes: number,
  options: ReadLimitOptions = {},
): Promise<LimitedRead> {
  const budget = new ByteBudget(maxBytes);
  if (options.preallocate === true) {
    const bytes = Buffer.allocUnsafe(maxBytes);
    let received = 0;
    for await (const chunk of body) {
      if (!budget.spend(chunk.length)) return { kind: 'over-limit' };
      bytes.set(chunk, received);
      received += chunk.length;
    }
    return { kind: 'complete', bytes: bytes.subarray(0, received) };
  }
  const chunks: Uint8Array[] = [];
  let received = 0;
  for await (const chunk of body) {
    if (!budget.spend(chunk.length)) return { kind: 'over-limit' };
    chunks.push(chunk);
    received += chunk.length;
  }
  return { kind: 'complete', bytes: Buffer.concat(chunks, received) };
}

/** Passes bytes through unchanged until more than `maxBytes` have come, then fails with `overLimit()`. */
export class ByteLimit extends Transform {
  private readonly budget: ByteBudget;

  constructor(
    maxBytes: number,
    private readonly overLimit: () => Error,
  ) {
    super();
    this.budget = new ByteBudget(maxBytes);
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    if (this.budget.spend(chunk.length)) callback(null, chunk);
    else callback(this.overLimit());
  }
}
