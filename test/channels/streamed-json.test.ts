import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { streamedJson, VerbatimJsonString } from '../../src/channels/streamed-json.js';

function bytesOf(body: ReturnType<typeof streamedJson>): Buffer {
  return Buffer.isBuffer(body) ? body : Buffer.concat([...body.chunks()]);
}

function byteLengthOf(body: ReturnType<typeof streamedJson>): number {
  return Buffer.isBuffer(body) ? body.length : body.byteLength;
}

function chunksOf(body: ReturnType<typeof streamedJson>): Buffer[] {
  assert.ok(!Buffer.isBuffer(body), 'a body with verbatim strings comes in chunks');
  return [...body.chunks()];
}

describe('streamedJson', () => {
  it('writes exactly what JSON.stringify writes, verbatim strings wherever they are', () => {
    const base64 = randomBytes(300_000).toString('base64');
    const value = (image: unknown, other: unknown) => ({
      model: 'm',
      input: {
        messages: [
          {
            role: 'user',
            content: [{ image }, { image: other }, { text: 'ünïcödé "quoted" \\ \n 😀 \u2028' }],
          },
        ],
      },
      parameters: { n: 2, seed: 7, list: [[1, 2]], nothing: null, skipped: undefined },
    });
    const verbatim = value(
      new VerbatimJsonString(['data:image/png;base64,', base64]),
      new VerbatimJsonString(['', 'QUJD']),
    );
    const plain = value(`data:image/png;base64,${base64}`, 'QUJD');
    const body = streamedJson(verbatim);
    const expected = Buffer.from(JSON.stringify(plain));
    assert.deepEqual(bytesOf(body), expected);
    assert.equal(byteLengthOf(body), expected.length);
  });

  it('counts bytes, not characters, outside the verbatim strings', () => {
    const value = { prompt: '€'.repeat(10), image: new VerbatimJsonString(['AAAA']) };
    const body = streamedJson(value);
    const expected = Buffer.from(JSON.stringify({ prompt: '€'.repeat(10), image: 'AAAA' }));
    assert.equal(byteLengthOf(body), expected.length);
    assert.deepEqual(bytesOf(body), expected);
  });

  it('is not fooled by caller strings that look like its markers', () => {
    const value = {
      text: 'verbatim-00000000-0000-0000-0000-000000000000-0',
      image: new VerbatimJsonString(['QUJD']),
    };
    const expected = JSON.stringify({ ...value, image: 'QUJD' });
    assert.equal(bytesOf(streamedJson(value)).toString('utf8'), expected);
  });

  it('gives a long string in chunks of at most 64 KiB, never whole', () => {
    const long = 'A'.repeat(1_000_000);
    const chunks = chunksOf(streamedJson({ image: new VerbatimJsonString([long]) }));
    assert.ok(chunks.length > 10);
    for (const chunk of chunks) assert.ok(chunk.length <= 64 * 1024, `${chunk.length} bytes`);
  });

  it('is one Buffer, equal to JSON.stringify, when the value holds no verbatim string', () => {
    const value = {
      model: 'm',
      input: { text: 'ünï "q" \\ \n' },
      list: [1, null],
      gone: undefined,
    };
    const body = streamedJson(value);
    assert.ok(Buffer.isBuffer(body));
    assert.deepEqual(body, Buffer.from(JSON.stringify(value)));
  });

  it('writes a verbatim string whole when JSON.stringify meets it outside streamedJson', () => {
    const value = { image: new VerbatimJsonString(['data:image/png;base64,', 'QUJD']) };
    assert.equal(JSON.stringify(value), '{"image":"data:image/png;base64,QUJD"}');
  });

  it('makes the same chunks again on a second pass (a body may be sent twice)', () => {
    const body = streamedJson({ image: new VerbatimJsonString(['QUJD', 'REVG']) });
    assert.deepEqual(bytesOf(body), bytesOf(body));
  });
});
