import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { GatewayError } from '../../src/errors/gateway-error.js';
import { checkImage } from '../../src/inputs/check-image.js';
import { createInputLoader } from '../../src/inputs/create-input-loader.js';
import { decodeBase64Payload } from '../../src/inputs/decode-data-url.js';
import { bytesInMemory, bytesOfBase64, type ImageBytes } from '../../src/inputs/image-bytes.js';
import {
  dataImage,
  imagePath,
  insertPngChunk,
  makeBmp,
  makeJpeg,
  makePng,
  makeWebp,
  padTo,
  pngChunk,
} from './image-fixtures.js';

const PATH = imagePath(1);
const LIMIT = 20 * 1024 * 1024;

/** A payload's bytes that record every head asked for and refuse to be decoded whole. */
function headsOnly(bytes: Buffer): { image: ImageBytes; heads: number[] } {
  const heads: number[] = [];
  const base64 = bytesOfBase64(bytes.toString('base64'), PATH, LIMIT);
  return {
    heads,
    image: {
      length: base64.length,
      head: (byteCount) => {
        heads.push(byteCount);
        return base64.head(byteCount);
      },
      all: () => assert.fail('the check decoded the whole image'),
    },
  };
}

/** A JPEG with `count` APP15 segments of `size` bytes between SOI and the frame header. */
function withAppSegments(jpeg: Buffer, count: number, size: number): Buffer {
  const segment = Buffer.alloc(4 + size, 0x20);
  segment.writeUInt16BE(0xffef, 0);
  segment.writeUInt16BE(size + 2, 2);
  const segments = Array.from({ length: count }, () => segment);
  return Buffer.concat([jpeg.subarray(0, 2), ...segments, jpeg.subarray(2)]);
}

function refusal(work: () => unknown): string {
  try {
    work();
  } catch (error) {
    assert.ok(error instanceof GatewayError, String(error));
    return error.message;
  }
  assert.fail('accepted');
}

describe('data URL images are checked without decoding them whole', () => {
  it('reads each format from the first 64 KiB of a large image', async () => {
    const images = {
      png: padTo(await makePng(640, 480), 3_000_000),
      jpeg: padTo(await makeJpeg(640, 480), 3_000_000),
      webp: await makeWebp(640, 480),
      bmp: makeBmp(640, 480),
    };
    for (const [format, bytes] of Object.entries(images)) {
      const { image, heads } = headsOnly(bytes);
      const loaded = checkImage(image, PATH, LIMIT);
      assert.deepEqual([loaded.format, loaded.width, loaded.height], [format, 640, 480]);
      assert.deepEqual(heads, [64 * 1024], format);
    }
  });

  it('reads further when a header reaches past the first head, still not the whole image', async () => {
    const bigText = pngChunk('tEXt', Buffer.alloc(300_000, 0x41));
    const png = padTo(insertPngChunk(await makePng(400, 300), bigText), 2_000_000);
    const { image, heads } = headsOnly(png);
    const loaded = checkImage(image, PATH, LIMIT);
    assert.deepEqual([loaded.width, loaded.height], [400, 300]);
    assert.ok(heads.length > 1 && (heads.at(-1) ?? 0) < 1_000_000, String(heads));

    const jpeg = padTo(withAppSegments(await makeJpeg(500, 260), 6, 60_000), 2_000_000);
    const jpegLoaded = checkImage(headsOnly(jpeg).image, PATH, LIMIT);
    assert.deepEqual([jpegLoaded.width, jpegLoaded.height], [500, 260]);
  });

  it('refuses what lies past the first head as the whole image would be refused', async () => {
    const filler = pngChunk('tEXt', Buffer.alloc(200_000, 0x41));
    const transparent = insertPngChunk(
      await makePng(400, 300),
      Buffer.concat([filler, pngChunk('tRNS', Buffer.from([0, 1, 0, 2, 0, 3]))]),
    );
    const truncated = insertPngChunk(await makePng(400, 300), filler).subarray(0, 150_000);
    for (const bytes of [transparent, truncated]) {
      const whole = refusal(() => checkImage(bytesInMemory(bytes), PATH, LIMIT));
      const { image } = headsOnly(bytes);
      assert.equal(
        refusal(() => checkImage(image, PATH, LIMIT)),
        whole,
      );
    }
    assert.match(
      refusal(() => checkImage(headsOnly(transparent).image, PATH, LIMIT)),
      /transparency/,
    );
    assert.match(
      refusal(() => checkImage(headsOnly(truncated).image, PATH, LIMIT)),
      /truncated/,
    );
  });

  it('refuses a bad payload at once, with the message a full decode gives', () => {
    const good = randomBytes(3000).toString('base64');
    const cases = [
      `${good.slice(0, 1000)} ${good.slice(1001)}`,
      `${good.slice(0, 2000)}-${good.slice(2001)}`,
      `${good.slice(0, 999)}é${good.slice(1000)}`,
      `${good.slice(0, 100)}=${good.slice(101)}`,
      good.slice(1),
      `${'A'.repeat(70_000)}.${'A'.repeat(3)}`,
      'QR==',
    ];
    for (const base64 of cases) {
      assert.equal(
        refusal(() => bytesOfBase64(base64, PATH, LIMIT)),
        refusal(() => decodeBase64Payload(base64, PATH, LIMIT)),
        base64.slice(0, 30),
      );
    }
  });

  it('decodes all the bytes on first use only, once, exactly', async () => {
    const png = padTo(await makePng(400, 300), 500_001);
    const [loaded] = await createInputLoader({ allowPrivateAddresses: false }).load(
      [dataImage(png)],
      new AbortController().signal,
    );
    assert.ok(loaded !== undefined);
    const bytes = loaded.bytes();
    assert.deepEqual(bytes, png);
    assert.equal(loaded.bytes(), bytes, 'the same Buffer, not a second decode');
  });
});
