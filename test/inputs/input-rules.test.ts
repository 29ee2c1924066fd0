// Every input-image rule with an accepted and a rejected case, each through both forms of
// docs/api.md §2.6: a data URL and an http URL served by a server on 127.0.0.1.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { InputImage } from '../../src/domain/generation-request.js';
import type { ImageFormat } from '../../src/domain/loaded-image.js';
import { createInputLoader } from '../../src/inputs/create-input-loader.js';
import { rejectsWith } from './assert-gateway-error.js';
import {
  dataImage,
  imagePath,
  makeBmp,
  makeGif,
  makeJpeg,
  makePng,
  makePngWithTransparency,
  makeTiff,
  makeWebp,
  once,
  padTo,
  urlImage,
} from './image-fixtures.js';
import { bytesHandler, type ImageServer, startImageServer } from './image-server.js';

const MAX_BYTES = 20 * 1024 * 1024;

type Expectation =
  { accept: { format: ImageFormat; width: number; height: number } } | { reject: RegExp };

interface Rule {
  name: string;
  image: () => Promise<Buffer>;
  expect: Expectation;
  /** Declared by the data URL's MIME type or the server's Content-Type; never trusted. */
  declaredMime?: string;
}

const accept = (format: ImageFormat, width: number, height: number): Expectation => ({
  accept: { format, width, height },
});
const reject = (message: RegExp): Expectation => ({ reject: message });

const smallJpeg = once(() => makeJpeg(320, 240));
const jpeg = (width: number, height: number) => once(() => makeJpeg(width, height));

const RULES: Rule[] = [
  // Formats, told from the bytes
  { name: 'JPEG', image: smallJpeg, expect: accept('jpeg', 320, 240) },
  {
    name: 'progressive JPEG',
    image: once(() => makeJpeg(320, 240, { progressive: true })),
    expect: accept('jpeg', 320, 240),
  },
  {
    name: 'PNG without alpha',
    image: once(() => makePng(300, 250)),
    expect: accept('png', 300, 250),
  },
  {
    name: 'greyscale PNG',
    image: once(() => makePng(300, 250, 'grey')),
    expect: accept('png', 300, 250),
  },
  {
    name: 'palette PNG without transparency',
    image: once(() => makePng(300, 250, 'palette')),
    expect: accept('png', 300, 250),
  },
  {
    name: 'PNG with alpha (RGBA)',
    image: once(() => makePng(300, 250, 'rgba')),
    expect: reject(/^PNG with alpha channel is not supported$/),
  },
  {
    name: 'PNG with alpha (grey and alpha)',
    image: once(() => makePng(300, 250, 'grey-alpha')),
    expect: reject(/^PNG with alpha channel is not supported$/),
  },
  {
    name: 'PNG with a tRNS chunk',
    image: once(() => makePngWithTransparency(300, 250)),
    expect: reject(/^PNG with transparency \(tRNS chunk\) is not supported$/),
  },
  {
    name: 'BMP, bottom-up',
    image: once(() => makeBmp(300, 250)),
    expect: accept('bmp', 300, 250),
  },
  {
    name: 'BMP, top-down (negative height)',
    image: once(() => makeBmp(300, 250, { topDown: true })),
    expect: accept('bmp', 300, 250),
  },
  {
    name: 'BMP with a core header',
    image: once(() => makeBmp(300, 250, { header: 'core' })),
    expect: accept('bmp', 300, 250),
  },
  {
    name: 'BMP with a V5 header, 1 bit per pixel',
    image: once(() => makeBmp(300, 250, { header: 'v5', bitsPerPixel: 1 })),
    expect: accept('bmp', 300, 250),
  },
  {
    name: 'WEBP lossy (VP8)',
    image: once(() => makeWebp(300, 250, 'lossy')),
    expect: accept('webp', 300, 250),
  },
  {
    name: 'WEBP lossless (VP8L)',
    image: once(() => makeWebp(300, 250, 'lossless')),
    expect: accept('webp', 300, 250),
  },
  {
    name: 'WEBP extended (VP8X)',
    image: once(() => makeWebp(300, 250, 'extended')),
    expect: accept('webp', 300, 250),
  },
  {
    name: 'GIF',
    image: once(() => makeGif(300, 250)),
    expect: reject(/^unsupported image format/),
  },
  {
    name: 'TIFF',
    image: once(() => makeTiff(300, 250)),
    expect: reject(/^unsupported image format/),
  },
  {
    name: 'text that is no image',
    image: once(() => Buffer.from('hello, I am not an image')),
    expect: reject(/^unsupported image format/),
  },
  {
    name: 'JPEG bytes declared as PNG',
    image: smallJpeg,
    declaredMime: 'image/png',
    expect: accept('jpeg', 320, 240),
  },
  {
    name: 'GIF declared as JPEG',
    image: once(() => makeGif(300, 250)),
    declaredMime: 'image/jpeg',
    expect: reject(/^unsupported image format/),
  },
  // Broken headers
  {
    name: 'corrupt JPEG (SOI followed by garbage)',
    image: once(() => Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(600, 7)])),
    expect: reject(/^(corrupt|truncated or corrupt) JPEG header/),
  },
  {
    name: 'JPEG cut before its frame header',
    image: once(async () => (await smallJpeg()).subarray(0, 100)),
    expect: reject(/^truncated or corrupt JPEG header$/),
  },
  {
    name: 'PNG cut inside IHDR',
    image: once(async () => (await makePng(300, 250)).subarray(0, 20)),
    expect: reject(/^truncated or corrupt PNG header$/),
  },
  {
    name: 'BMP cut inside its DIB header',
    image: once(() => makeBmp(300, 250).subarray(0, 30)),
    expect: reject(/^truncated or corrupt BMP header$/),
  },
  {
    name: 'WEBP cut after its RIFF header',
    image: once(async () => (await makeWebp(300, 250)).subarray(0, 24)),
    expect: reject(/^truncated or corrupt WEBP header$/),
  },
  // Width and height in [240, 8000]
  { name: 'width 240', image: jpeg(240, 300), expect: accept('jpeg', 240, 300) },
  {
    name: 'width 239',
    image: jpeg(239, 300),
    expect: reject(/^width 239 is outside \[240, 8000\]/),
  },
  { name: 'height 240', image: jpeg(300, 240), expect: accept('jpeg', 300, 240) },
  {
    name: 'height 239',
    image: jpeg(300, 239),
    expect: reject(/^height 239 is outside \[240, 8000\]/),
  },
  { name: 'width 8000', image: jpeg(8000, 1000), expect: accept('jpeg', 8000, 1000) },
  {
    name: 'width 8001',
    image: jpeg(8001, 1001),
    expect: reject(/^width 8001 is outside \[240, 8000\]/),
  },
  { name: 'height 8000', image: jpeg(1000, 8000), expect: accept('jpeg', 1000, 8000) },
  {
    name: 'height 8001',
    image: jpeg(1001, 8001),
    expect: reject(/^height 8001 is outside \[240, 8000\]/),
  },
  {
    name: 'BMP width 8001 (1 bit per pixel)',
    image: once(() => makeBmp(8001, 1001, { bitsPerPixel: 1 })),
    expect: reject(/^width 8001/),
  },
  // Aspect ratio in [1:8, 8:1]
  { name: 'aspect 1:8', image: jpeg(240, 1920), expect: accept('jpeg', 240, 1920) },
  { name: 'aspect 8:1', image: jpeg(1920, 240), expect: accept('jpeg', 1920, 240) },
  {
    name: 'aspect beyond 1:8',
    image: jpeg(240, 1921),
    expect: reject(/^aspect ratio 240:1921 is outside \[1:8, 8:1\]$/),
  },
  {
    name: 'aspect beyond 8:1',
    image: jpeg(1921, 240),
    expect: reject(/^aspect ratio 1921:240 is outside \[1:8, 8:1\]$/),
  },
  // At most 20 MB (20 MiB) decoded
  {
    name: 'exactly 20 MiB',
    image: once(async () => padTo(await smallJpeg(), MAX_BYTES)),
    expect: accept('jpeg', 320, 240),
  },
  {
    name: 'one byte over 20 MiB',
    image: once(async () => padTo(await smallJpeg(), MAX_BYTES + 1)),
    expect: reject(/^image is larger than 20 MB \(20971520 bytes\)/),
  },
];

describe('input image rules, as data URLs and as http URLs', () => {
  const loader = createInputLoader({ allowPrivateAddresses: true });
  let server: ImageServer;

  before(async () => {
    server = await startImageServer();
  });
  after(() => server.close());

  const transports: [string, (rule: Rule, bytes: Buffer, index: number) => InputImage][] = [
    ['data URL', (rule, bytes) => dataImage(bytes, 2, rule.declaredMime)],
    [
      'URL',
      (rule, bytes, index) =>
        urlImage(
          server.serve(
            `/rule-${index}`,
            bytesHandler(bytes, { contentType: rule.declaredMime ?? 'image/png' }),
          ),
          2,
        ),
    ],
  ];

  RULES.forEach((rule, index) => {
    for (const [transport, toInput] of transports) {
      const verdict = 'accept' in rule.expect ? 'accepts' : 'rejects';
      it(`${verdict} ${rule.name} (${transport})`, async () => {
        const bytes = await rule.image();
        const input = toInput(rule, bytes, index);
        const signal = new AbortController().signal;
        if ('accept' in rule.expect) {
          const [loaded] = await loader.load([input], signal);
          assert.deepEqual(
            { format: loaded?.format, width: loaded?.width, height: loaded?.height },
            rule.expect.accept,
          );
          assert.equal(loaded?.path, imagePath(2));
          assert.equal(loaded?.bytes().length, bytes.length);
        } else {
          await rejectsWith(
            loader.load([input], signal),
            'InvalidImage',
            imagePath(2),
            rule.expect.reject,
          );
        }
      });
    }
  });
});
