import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';
import type { InputImage } from '../src/domain/generation-request.js';
import { createInputLoader } from '../src/inputs/create-input-loader.js';
import { type BenchRow, medianMs } from './bench-row.js';

function noise(width: number, height: number) {
  return sharp({
    create: {
      width,
      height,
      channels: 3,
      background: { r: 0, g: 0, b: 0 },
      noise: { type: 'gaussian', mean: 128, sigma: 40 },
    },
  });
}

function dataImage(bytes: Buffer, index: number): InputImage {
  return {
    path: `input.messages[0].content[${index}].image`,
    source: { kind: 'data', declaredMime: 'image/png', base64: bytes.toString('base64') },
  };
}

function megabytes(bytes: Buffer): string {
  return `${(bytes.length / 1e6).toFixed(1)} MB`;
}

/** Input validation per image: base64 decode, format sniffing and header checks. */
export default async function bench(): Promise<BenchRow[]> {
  const loader = createInputLoader({ allowPrivateAddresses: true });
  const signal = new AbortController().signal;

  const jpeg1mp = await noise(1000, 1000).jpeg({ quality: 90 }).toBuffer();
  const png4mp = await noise(2000, 2000).png({ compressionLevel: 1 }).toBuffer();
  const padded15mb = Buffer.alloc(15 * 1024 * 1024);
  jpeg1mp.copy(padded15mb);

  const rows: BenchRow[] = [];
  const single: [string, Buffer, number][] = [
    ['data URL, 1 MP JPEG', jpeg1mp, 40],
    ['data URL, 4 MP PNG', png4mp, 20],
    ['data URL, 15 MiB payload', padded15mb, 15],
  ];
  for (const [name, bytes, iterations] of single) {
    const images = [dataImage(bytes, 1)];
    const ms = await medianMs(() => loader.load(images, signal), iterations, 2);
    rows.push({
      name,
      value: ms,
      unit: 'ms',
      note: `${megabytes(bytes)}, median of ${iterations}`,
    });
  }

  const nine = Array.from({ length: 9 }, (_, index) => dataImage(jpeg1mp, index + 1));
  const nineMs = await medianMs(() => loader.load(nine, signal), 20, 2);
  rows.push({
    name: 'data URLs, 9 × 1 MP JPEG in one request, per image',
    value: nineMs / 9,
    unit: 'ms',
    note: 'median of 20 requests / 9',
  });

  const server = createServer((_request, response) => {
    response.writeHead(200, { 'content-length': jpeg1mp.length }).end(jpeg1mp);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/image.jpg`;
  const urlImages: InputImage[] = [
    { path: 'input.messages[0].content[1].image', source: { kind: 'url', url } },
  ];
  const urlMs = await medianMs(() => loader.load(urlImages, signal), 40, 2);
  server.close();
  rows.push({
    name: 'http URL on loopback, 1 MP JPEG',
    value: urlMs,
    unit: 'ms',
    note: `${megabytes(jpeg1mp)}, connect + fetch + checks, median of 40`,
  });
  return rows;
}
