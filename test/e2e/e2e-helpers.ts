import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';
import { GENERATION_URL } from '../helpers/requests.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

export interface RunningGateway {
  gateway: TestGateway;
  baseUrl: string;
  authorization: string;
  close(): Promise<void>;
}

/** A whole gateway listening on a loopback port, with URL inputs allowed from loopback. */
export async function startRunningGateway(): Promise<RunningGateway> {
  const gateway = await startTestGateway({ env: { IMAGEGATE_ALLOW_PRIVATE_IMAGE_URLS: 'true' } });
  const baseUrl = await gateway.listen();
  return { gateway, baseUrl, authorization: await gateway.bearer(), close: () => gateway.close() };
}

export interface GenerationReply {
  status: number;
  body: {
    code?: string;
    message?: string;
    output: {
      finished?: boolean;
      choices: {
        finish_reason: string;
        message: { role: string; content: { type?: string; image: string }[] };
      }[];
    };
    usage: Record<string, number | string>;
    request_id: string;
  };
}

export async function generate(running: RunningGateway, body: object): Promise<GenerationReply> {
  const response = await fetch(`${running.baseUrl}${GENERATION_URL}`, {
    method: 'POST',
    headers: { authorization: running.authorization, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as GenerationReply['body'] };
}

export function imageUrls(reply: GenerationReply): string[] {
  assert.equal(reply.status, 200, JSON.stringify(reply.body));
  const [choice] = reply.body.output.choices;
  assert.ok(choice);
  assert.equal(choice.finish_reason, 'stop');
  assert.equal(choice.message.role, 'assistant');
  return choice.message.content.map((item) => item.image);
}

export interface Png {
  bytes: Buffer;
  width: number;
  height: number;
  channels: number;
  /** Raw pixels, `channels` bytes each, rows top to bottom. */
  pixels: Buffer;
}

/** Fetches a returned URL over the socket and decodes the PNG. */
export async function fetchPng(url: string): Promise<Png> {
  const response = await fetch(url);
  assert.equal(response.status, 200, url);
  assert.equal(response.headers.get('content-type'), 'image/png');
  const bytes = Buffer.from(await response.arrayBuffer());
  assert.equal(Number(response.headers.get('content-length')), bytes.length);
  const metadata = await sharp(bytes).metadata();
  assert.equal(metadata.format, 'png');
  const { data, info } = await sharp(bytes)
    .removeAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  return { bytes, width: info.width, height: info.height, channels: info.channels, pixels: data };
}

/** A photo-like test image: smooth gradients and a few blocks, as a JPEG data URL or bytes. */
export async function testImage(
  width: number,
  height: number,
  hue = 0,
  format: 'jpeg' | 'png' = 'jpeg',
): Promise<Buffer> {
  const pixels = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const offset = (y * width + x) * 3;
      pixels[offset] = (x * 255) / width + hue;
      pixels[offset + 1] = (y * 255) / height;
      pixels[offset + 2] = ((x + y) % 64 < 32 ? 200 : 60) - hue / 2;
    }
  }
  const image = sharp(pixels, { raw: { width, height, channels: 3 } });
  return format === 'jpeg' ? image.jpeg({ quality: 92 }).toBuffer() : image.png().toBuffer();
}

export function dataUrl(bytes: Buffer, mime = 'image/jpeg'): string {
  return `data:${mime};base64,${bytes.toString('base64')}`;
}

/** Resizes image bytes to the given size and returns raw RGB pixels. */
export async function resizedPixels(bytes: Buffer, width: number, height: number): Promise<Buffer> {
  return sharp(bytes).resize(width, height, { fit: 'fill' }).removeAlpha().raw().toBuffer();
}

/** Mean absolute difference per channel between two RGB rasters, over the pixels `include` keeps. */
export function meanDifference(
  a: Buffer,
  b: Buffer,
  width: number,
  include: (x: number, y: number) => boolean = () => true,
): number {
  let total = 0;
  let count = 0;
  for (let index = 0; index < a.length; index += 3) {
    const pixel = index / 3;
    if (!include(pixel % width, Math.floor(pixel / width))) continue;
    total += Math.abs((a[index] as number) - (b[index] as number));
    total += Math.abs((a[index + 1] as number) - (b[index + 1] as number));
    total += Math.abs((a[index + 2] as number) - (b[index + 2] as number));
    count += 3;
  }
  return total / count;
}

/** Serves fixed bytes at /<name> on 127.0.0.1, for URL inputs. */
export async function serveImages(
  images: Record<string, Buffer>,
): Promise<{ url(name: string): string; close(): Promise<void> }> {
  const server: Server = createServer((request, response) => {
    const bytes = images[(request.url ?? '/').slice(1)];
    if (bytes === undefined) {
      response.writeHead(404).end();
      return;
    }
    response
      .writeHead(200, { 'content-type': 'image/jpeg', 'content-length': bytes.length })
      .end(bytes);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (name) => `http://127.0.0.1:${port}/${name}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
