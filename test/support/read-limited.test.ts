import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, it } from 'node:test';
import { ByteLimit, readLimited } from '../../src/support/read-limited.js';

/** Chunks of `sizes` bytes, recording how many were asked for. */
function chunks(...sizes: number[]): AsyncIterable<Uint8Array> & { pulled: () => number } {
  let pulled = 0;
  return {
    pulled: () => pulled,
    async *[Symbol.asyncIterator]() {
      for (const [index, size] of sizes.entries()) {
        pulled += 1;
        yield Buffer.alloc(size, index + 1);
      }
    },
  };
}

describe('readLimited', () => {
  it('reads a body up to and including the limit into one buffer', async () => {
    const read = await readLimited(chunks(3, 4, 3), 10);
    assert.ok(read.kind === 'complete');
    assert.deepEqual(read.bytes, Buffer.from([1, 1, 1, 2, 2, 2, 2, 3, 3, 3]));
  });

  it('stops at the chunk that passes the limit and reads no further', async () => {
    const body = chunks(6, 5, 100);
    assert.deepEqual(await readLimited(body, 10), { kind: 'over-limit' });
    assert.equal(body.pulled(), 2);
  });

  it('destroys a stream it stops reading', async () => {
    const stream = Readable.from([Buffer.alloc(8), Buffer.alloc(8), Buffer.alloc(8)]);
    assert.deepEqual(await readLimited(stream, 10), { kind: 'over-limit' });
    assert.equal(stream.destroyed, true);
  });

  it('with preallocate, fills one buffer of the limit and answers a shorter body shorter', async () => {
    const whole = await readLimited(chunks(2, 3), 5, { preallocate: true });
    assert.ok(whole.kind === 'complete');
    assert.deepEqual(whole.bytes, Buffer.from([1, 1, 2, 2, 2]));

    const short = await readLimited(chunks(2), 5, { preallocate: true });
    assert.ok(short.kind === 'complete');
    assert.equal(short.bytes.length, 2);

    assert.deepEqual(await readLimited(chunks(2, 4), 5, { preallocate: true }), {
      kind: 'over-limit',
    });
  });

  it('reads an empty body', async () => {
    const read = await readLimited(chunks(), 0);
    assert.ok(read.kind === 'complete');
    assert.equal(read.bytes.length, 0);
  });
});

describe('ByteLimit', () => {
  const collect = async (source: Readable, limit: ByteLimit) => {
    const received: Buffer[] = [];
    await pipeline(source, limit, async (stream: AsyncIterable<Buffer>) => {
      for await (const chunk of stream) received.push(chunk);
    });
    return Buffer.concat(received);
  };

  it('passes bytes through unchanged up to the limit', async () => {
    const bytes = await collect(
      Readable.from([Buffer.from('abc'), Buffer.from('de')]),
      new ByteLimit(5, () => new Error('too big')),
    );
    assert.equal(bytes.toString(), 'abcde');
  });

  it('fails with the given error once the limit is passed', async () => {
    await assert.rejects(
      collect(
        Readable.from([Buffer.from('abc'), Buffer.from('def')]),
        new ByteLimit(5, () => new Error('more than 5 bytes')),
      ),
      /more than 5 bytes/,
    );
  });
});
