import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { type ImageHeader, ImageHeaderError } from '../../src/inputs/image-header.js';
import { sniffImageHeader } from '../../src/inputs/sniff-format.js';
import {
  insertPngChunk,
  makeBmp,
  makeGif,
  makeJpeg,
  makePng,
  makePngWithTransparency,
  makeTiff,
  makeWebp,
  pngChunk,
} from './image-fixtures.js';

function sniffOrProblem(bytes: Buffer): ImageHeader | string {
  try {
    return sniffImageHeader(bytes);
  } catch (error) {
    assert.ok(error instanceof ImageHeaderError, `not an ImageHeaderError: ${String(error)}`);
    return error.message;
  }
}

describe('sniffImageHeader', () => {
  const valid = new Map<string, Buffer>();

  before(async () => {
    valid.set('jpeg', await makeJpeg(301, 257));
    valid.set('progressive jpeg', await makeJpeg(301, 257, { progressive: true }));
    valid.set('png rgb', await makePng(301, 257, 'rgb'));
    valid.set('png grey', await makePng(301, 257, 'grey'));
    valid.set('png palette', await makePng(301, 257, 'palette'));
    valid.set('bmp info', makeBmp(301, 257));
    valid.set('bmp top-down', makeBmp(301, 257, { topDown: true }));
    valid.set('bmp core', makeBmp(301, 257, { header: 'core' }));
    valid.set('bmp v5 1-bit', makeBmp(301, 257, { header: 'v5', bitsPerPixel: 1 }));
    valid.set('webp lossy', await makeWebp(301, 257, 'lossy'));
    valid.set('webp lossless', await makeWebp(301, 257, 'lossless'));
    valid.set('webp extended', await makeWebp(301, 257, 'extended'));
  });

  it('reads format and dimensions of every accepted format and variant from the bytes', () => {
    const formats: Record<string, string> = { jpeg: 'jpeg', png: 'png', bmp: 'bmp', webp: 'webp' };
    for (const [name, bytes] of valid) {
      const expectedFormat = formats[name.split(' ').find((word) => word in formats) ?? ''];
      assert.deepEqual(
        sniffImageHeader(bytes),
        { format: expectedFormat, width: 301, height: 257 },
        name,
      );
    }
  });

  it('finds the JPEG frame header after APP segments (EXIF and ICC metadata)', async () => {
    const sharp = (await import('sharp')).default;
    const withMetadata = await sharp(valid.get('jpeg'))
      .withMetadata({ exif: { IFD0: { Copyright: 'x'.repeat(2000) } } })
      .jpeg()
      .toBuffer();
    assert.deepEqual(sniffImageHeader(withMetadata), { format: 'jpeg', width: 301, height: 257 });
  });

  it('refuses PNG colour types with alpha and any tRNS chunk before the image data', async () => {
    assert.equal(
      sniffOrProblem(await makePng(300, 300, 'rgba')),
      'PNG with alpha channel is not supported',
    );
    assert.equal(
      sniffOrProblem(await makePng(300, 300, 'grey-alpha')),
      'PNG with alpha channel is not supported',
    );
    assert.match(String(sniffOrProblem(await makePngWithTransparency(300, 300))), /tRNS/);
    assert.match(String(sniffOrProblem(await makePng(300, 300, 'palette-alpha'))), /tRNS/);
  });

  it('walks past other ancillary PNG chunks to IDAT', async () => {
    const png = insertPngChunk(
      await makePng(300, 260),
      pngChunk('tEXt', Buffer.from('Comment\0tRNS is only a word here')),
    );
    assert.deepEqual(sniffImageHeader(png), { format: 'png', width: 300, height: 260 });
  });

  it('names every other format unsupported, whatever its extension or MIME type', async () => {
    const others = [
      await makeGif(300, 300),
      await makeTiff(300, 300),
      Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>'),
      Buffer.from('GIF89a'),
      Buffer.alloc(0),
      Buffer.from([0x89, 0x50, 0x4e]),
    ];
    for (const bytes of others) {
      assert.match(String(sniffOrProblem(bytes)), /^unsupported image format/);
    }
  });

  it('refuses BMP variants no decoder here handles', () => {
    const embeddedJpeg = makeBmp(300, 300, { compression: 4 });
    assert.match(String(sniffOrProblem(embeddedJpeg)), /embedded JPEG or PNG/);
    const rleWithTrueColour = makeBmp(300, 300, { compression: 1 });
    assert.match(String(sniffOrProblem(rleWithTrueColour)), /corrupt BMP header: compression 1/);
    const unknownHeader = makeBmp(300, 300);
    unknownHeader.writeUInt32LE(20, 14);
    assert.match(String(sniffOrProblem(unknownHeader)), /unknown DIB header of 20 bytes/);
    const twoPlanes = makeBmp(300, 300);
    twoPlanes.writeUInt16LE(2, 26);
    assert.match(String(sniffOrProblem(twoPlanes)), /2 colour planes/);
  });

  it('refuses a JPEG whose height comes later in a DNL marker', () => {
    const jpeg = Buffer.from(valid.get('jpeg') as Buffer);
    const sof = jpeg.indexOf(Buffer.from([0xff, 0xc0]));
    jpeg.writeUInt16BE(0, sof + 5);
    assert.match(String(sniffOrProblem(jpeg)), /DNL/);
  });

  it('refuses a lossy WEBP whose first frame is not a key frame', () => {
    const webp = Buffer.from(valid.get('webp lossy') as Buffer);
    webp[20] = (webp[20] as number) | 1;
    assert.match(String(sniffOrProblem(webp)), /corrupt WEBP header/);
  });

  it('answers every truncation of every valid file with a header problem, never a crash', () => {
    for (const [name, bytes] of valid) {
      for (let length = 0; length < Math.min(bytes.length, 400); length++) {
        const result = sniffOrProblem(bytes.subarray(0, length));
        if (typeof result !== 'string') continue;
        assert.match(
          result,
          /^(truncated or corrupt|corrupt|unsupported)/,
          `${name} cut at ${length}`,
        );
      }
    }
  });

  it('survives random bytes behind every signature', () => {
    const signatures = [
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
      Buffer.from([0xff, 0xd8, 0xff]),
      Buffer.from('BM'),
      Buffer.from('RIFF\x10\x00\x00\x00WEBP', 'latin1'),
    ];
    for (const signature of signatures) {
      for (let round = 0; round < 500; round++) {
        const bytes = Buffer.concat([signature, randomBytes(round % 80)]);
        sniffOrProblem(bytes);
      }
    }
    for (const [name, bytes] of valid) {
      for (let round = 0; round < 200; round++) {
        const damaged = Buffer.from(bytes);
        const at = 2 + (round % Math.min(60, damaged.length - 2));
        damaged[at] = (damaged[at] as number) ^ (1 + (round % 255));
        assert.doesNotThrow(() => sniffOrProblem(damaged), name);
      }
    }
  });
});
