// The generation route's JSON body reader against what Fastify's parser does (concatenate the
// chunks, decode, JSON.parse), on the bodies it is for and on the bodies that could hurt it.
import secureJsonParse from 'secure-json-parse';
import { JsonBodyReader } from '../src/support/json-body-reader.js';
import { type BenchRow, medianMs } from './bench-row.js';

const CHUNK_BYTES = 64 * 1024;
const LIFT_BYTES = 64 * 1024;

function chunksOf(text: string): Buffer[] {
  const bytes = Buffer.from(text);
  const chunks: Buffer[] = [];
  for (let start = 0; start < bytes.length; start += CHUNK_BYTES)
    chunks.push(bytes.subarray(start, start + CHUNK_BYTES));
  return chunks;
}

function withReader(chunks: readonly Buffer[]): unknown {
  const reader = new JsonBodyReader(LIFT_BYTES);
  for (const chunk of chunks) reader.push(chunk);
  return reader.finish();
}

function likeFastify(chunks: readonly Buffer[]): unknown {
  return secureJsonParse.parse(Buffer.concat(chunks).toString('utf8'), undefined, {
    protoAction: 'error',
    constructorAction: 'error',
  });
}

const BODIES: { name: string; text: () => string }[] = [
  {
    name: '9 data URLs of 20 MB',
    text: () => {
      const image = `data:image/png;base64,${Buffer.alloc(15_700_000, 7).toString('base64')}`;
      return JSON.stringify({ input: { messages: [{ content: Array(9).fill({ image }) }] } });
    },
  },
  {
    name: '16 MB of two-byte strings',
    text: () => JSON.stringify(Array(3_000_000).fill('ab')),
  },
  {
    name: '16 MB of escaped strings',
    text: () => JSON.stringify(Array(1_500_000).fill('a"b\n')),
  },
];

export default async function bench(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (const body of BODIES) {
    const text = body.text();
    const chunks = chunksOf(text);
    const megabytes = (Buffer.byteLength(text) / 2 ** 20).toFixed(0);
    for (const [parser, parse] of [
      ['reader', withReader],
      ["Fastify's way", likeFastify],
    ] as const)
      rows.push({
        name: `JSON body, ${body.name}: ${parser}`,
        value: await medianMs(() => parse(chunks), 5),
        unit: 'ms',
        note: `${megabytes} MiB in 64 KiB chunks, median of 5`,
      });
  }
  return rows;
}
