import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidJson, JsonBodyReader, PrototypeKey } from '../../src/support/json-body-reader.js';

const LIFT = 16;

/** Reads `text` through a reader, cut into chunks of `size` bytes. */
function read(text: string | Buffer, size: number, lift = LIFT): unknown {
  const bytes = typeof text === 'string' ? Buffer.from(text) : text;
  const reader = new JsonBodyReader(lift);
  for (let start = 0; start < bytes.length; start += size)
    reader.push(bytes.subarray(start, start + size));
  return reader.finish();
}

const CHUNK_SIZES = [1, 2, 3, 5, 7, 16, 17, 64, 1 << 20];

function sameAsJsonParse(text: string): void {
  const expected: unknown = JSON.parse(text);
  for (const size of CHUNK_SIZES)
    assert.deepEqual(read(text, size), expected, `chunks of ${size}: ${text.slice(0, 80)}`);
}

function refusedLikeJsonParse(text: string): void {
  assert.throws(() => JSON.parse(text), SyntaxError, `JSON.parse accepts ${JSON.stringify(text)}`);
  for (const size of CHUNK_SIZES)
    assert.throws(
      () => read(text, size),
      InvalidJson,
      `chunks of ${size}: ${JSON.stringify(text)}`,
    );
}

const LONG = `data:image/png;base64,${'iVBORw0KGgo'.repeat(20)}`;

describe('JsonBodyReader', () => {
  it('gives what JSON.parse gives, however the text is cut into chunks', () => {
    const texts = [
      '{}',
      '[]',
      '"just a string"',
      `"${LONG}"`,
      '  {"a" : 1, "b":[true,false,null,-1.5e3], "c":{"d":"e"}}  ',
      JSON.stringify({
        model: 'gen-2.7-image-pro',
        input: { messages: [{ role: 'user', content: [{ image: LONG }, { text: 'a cat' }] }] },
        parameters: { n: 1 },
      }),
      JSON.stringify({ images: [LONG, `${LONG}x`, LONG, 'short'], [LONG]: LONG }),
      // Long strings that JSON.parse must decode: escapes, non-ASCII, an escaped quote.
      JSON.stringify({ a: `${LONG}\n${LONG}`, b: `${LONG}é€😀`, c: `${LONG}"${LONG}`, d: '\\' }),
      JSON.stringify({ a: `\\${LONG}`, b: `${LONG}\\`, c: `${LONG}\u0001` }),
      JSON.stringify('€'.repeat(40)),
      JSON.stringify({ nested: [[[[{ x: [LONG] }]]]] }),
    ];
    for (const text of texts) sameAsJsonParse(text);
  });

  it("skips a leading byte order mark, as Fastify's parser does", () => {
    const text = JSON.stringify({ bom: LONG });
    for (const size of CHUNK_SIZES) assert.deepEqual(read(`\uFEFF${text}`, size), JSON.parse(text));
  });

  it('gives back each long verbatim string once, equal to the original', () => {
    const images = Array.from({ length: 9 }, (_, index) => `${LONG}${index}`.repeat(500));
    const body = JSON.stringify({ images });
    const parsed = read(body, 65_536, 1024) as { images: string[] };
    assert.deepEqual(parsed.images, images);
  });

  it('refuses what JSON.parse refuses, also when a long string stands where a token cannot', () => {
    const texts = [
      '',
      '{',
      '{"a":}',
      `{"a":"${LONG}"`,
      `{"a":"${LONG}`,
      `{"a":"${LONG}\\`,
      `{"a" "${LONG}"}`,
      `["${LONG}" "${LONG}"]`,
      `{"a":"${LONG}"}}`,
      `{"a":"${LONG}\n"}`,
      `{"a":"${LONG}\u0000"}`,
      `{"a":"\t${LONG}"}`,
      `{"a":"${LONG}\\x"}`,
      `{'a':1}`,
      '{"a":1,}',
    ];
    for (const text of texts) refusedLikeJsonParse(text);
  });

  it('refuses bodies that would poison a prototype, with or without long strings', () => {
    for (const text of [
      '{"__proto__":{"admin":true}}',
      `{"a":"${LONG}","__proto__":{"x":1}}`,
      '{"constructor":{"prototype":{"admin":true}}}',
      `{"\\u005f_proto__":{"x":"${LONG}"}}`,
    ])
      for (const size of CHUNK_SIZES) assert.throws(() => read(text, size), PrototypeKey, text);
    // Not JSON at all: that is what it is refused for, whatever keys it holds.
    assert.throws(() => read('{"__proto__":{"x":1}', 7), InvalidJson);
  });

  it('does not mistake a caller string for one of its placeholders', () => {
    const text = JSON.stringify({ a: '\u0000lifted:00:0', b: LONG, c: '\u0000lifted:' });
    sameAsJsonParse(text);
  });

  it('decodes UTF-8 split across chunks, outside and inside strings', () => {
    const text = JSON.stringify({ 'ключ€': 'значение😀', long: `${'é'.repeat(30)}` });
    sameAsJsonParse(text);
    const bytes = Buffer.from(text);
    for (let cut = 1; cut < bytes.length; cut++) {
      const reader = new JsonBodyReader(LIFT);
      reader.push(bytes.subarray(0, cut));
      reader.push(bytes.subarray(cut));
      assert.deepEqual(reader.finish(), JSON.parse(text));
    }
  });

  it('reads a body of many short strings, escaped or not, among long ones', () => {
    const items = Array.from({ length: 200_000 }, (_, index) =>
      index % 1000 === 0 ? `${LONG}${index}` : index % 3 === 0 ? `a"${index}` : `s${index}`,
    );
    const text = JSON.stringify({ items });
    for (const size of [7, 4096, 65_536]) assert.deepEqual(read(text, size), { items });
  });

  it('parses deep nesting around a long string without overflowing the stack', () => {
    const depth = 100_000;
    const text = `${'['.repeat(depth)}"${LONG}"${']'.repeat(depth)}`;
    let value = read(text, 65_536);
    for (let level = 0; level < depth; level++) value = (value as unknown[])[0];
    assert.equal(value, LONG);
  });
});
