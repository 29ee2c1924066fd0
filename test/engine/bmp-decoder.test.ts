import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BmpDecodeError } from '../../src/engine/local/bmp-decode-error.js';
import { decodeBmp } from '../../src/engine/local/bmp-decoder.js';
import { bmp24, buildBmp } from './bmp-fixtures.js';
import { syntheticPixels } from './engine-fixtures.js';

const RED = [255, 0, 0] as const;
const GREEN = [0, 255, 0] as const;
const BLUE = [0, 0, 255] as const;
const WHITE = [255, 255, 255] as const;

/** Top row first: RED GREEN BLUE / WHITE RED GREEN. */
const EXPECTED_3X2 = Uint8Array.from([...RED, ...GREEN, ...BLUE, ...WHITE, ...RED, ...GREEN]);
const PALETTE = [RED, GREEN, BLUE, WHITE] as const;

describe('decodeBmp', () => {
  it('reads 24-bit rows bottom-up and top-down, with row padding', () => {
    const pixels = syntheticPixels(5, 3, 1);
    for (const topDown of [false, true]) {
      const decoded = decodeBmp(bmp24(pixels, topDown));
      assert.equal(decoded.width, 5);
      assert.equal(decoded.height, 3);
      assert.deepEqual(decoded.data, pixels.data);
    }
  });

  it('reads 8-bit, 4-bit and 1-bit palettes', () => {
    // Stored bottom-up: the second output row comes first. Each row padded to 4 bytes.
    const eightBit = buildBmp({
      headerSize: 40,
      width: 3,
      height: 2,
      bitsPerPixel: 8,
      palette: PALETTE,
      pixelData: Uint8Array.from([3, 0, 1, 0, 0, 1, 2, 0]),
    });
    assert.deepEqual(decodeBmp(eightBit).data, EXPECTED_3X2);

    const fourBit = buildBmp({
      headerSize: 40,
      width: 3,
      height: 2,
      bitsPerPixel: 4,
      palette: PALETTE,
      pixelData: Uint8Array.from([0x30, 0x10, 0, 0, 0x01, 0x20, 0, 0]),
    });
    assert.deepEqual(decodeBmp(fourBit).data, EXPECTED_3X2);

    const oneBit = buildBmp({
      headerSize: 40,
      width: 3,
      height: 1,
      bitsPerPixel: 1,
      palette: [RED, WHITE],
      pixelData: Uint8Array.from([0b1010_0000, 0, 0, 0]),
    });
    assert.deepEqual(decodeBmp(oneBit).data, Uint8Array.from([...WHITE, ...RED, ...WHITE]));
  });

  it('reads the old core header with 3-byte palette entries', () => {
    const file = buildBmp({
      headerSize: 12,
      width: 3,
      height: 2,
      bitsPerPixel: 8,
      palette: PALETTE,
      pixelData: Uint8Array.from([3, 0, 1, 0, 0, 1, 2, 0]),
    });
    assert.deepEqual(decodeBmp(file).data, EXPECTED_3X2);
  });

  it('reads 16-bit 5-5-5 by default and 5-6-5 with bit fields', () => {
    const rgb555 = buildBmp({
      headerSize: 40,
      width: 2,
      height: 1,
      bitsPerPixel: 16,
      pixelData: Uint8Array.from([0x00, 0x7c, 0xff, 0x7f]),
    });
    assert.deepEqual(decodeBmp(rgb555).data, Uint8Array.from([...RED, ...WHITE]));

    const rgb565 = buildBmp({
      headerSize: 40,
      width: 2,
      height: 1,
      bitsPerPixel: 16,
      compression: 3,
      masks: [0xf800, 0x07e0, 0x001f],
      pixelData: Uint8Array.from([0xe0, 0x07, 0x1f, 0x00]),
    });
    assert.deepEqual(decodeBmp(rgb565).data, Uint8Array.from([...GREEN, ...BLUE]));
  });

  it('reads 32-bit BGRX and V5 headers with masks inside the header, ignoring alpha', () => {
    const bgrx = buildBmp({
      headerSize: 40,
      width: 2,
      height: 1,
      bitsPerPixel: 32,
      pixelData: Uint8Array.from([0, 0, 255, 0, 255, 0, 0, 0]),
    });
    assert.deepEqual(decodeBmp(bgrx).data, Uint8Array.from([...RED, ...BLUE]));

    const rgba = buildBmp({
      headerSize: 124,
      width: 2,
      height: -1,
      bitsPerPixel: 32,
      compression: 3,
      masks: [0x000000ff, 0x0000ff00, 0x00ff0000],
      pixelData: Uint8Array.from([255, 0, 0, 128, 0, 255, 0, 255]),
    });
    assert.deepEqual(decodeBmp(rgba).data, Uint8Array.from([...RED, ...GREEN]));
  });

  it('reads RLE8 with encoded runs, absolute runs, end of line and end of bitmap', () => {
    // Bottom row: absolute run [3, 0, 1]; top row: encoded run of 3 x index 2.
    const file = buildBmp({
      headerSize: 40,
      width: 3,
      height: 2,
      bitsPerPixel: 8,
      compression: 1,
      palette: PALETTE,
      pixelData: Uint8Array.from([0, 3, 3, 0, 1, 0, 0, 0, 3, 2, 0, 1]),
    });
    const expected = Uint8Array.from([...BLUE, ...BLUE, ...BLUE, ...WHITE, ...RED, ...GREEN]);
    assert.deepEqual(decodeBmp(file).data, expected);
  });

  it('reads RLE4 runs of alternating indices', () => {
    const file = buildBmp({
      headerSize: 40,
      width: 4,
      height: 1,
      bitsPerPixel: 4,
      compression: 2,
      palette: PALETTE,
      pixelData: Uint8Array.from([4, 0x12, 0, 1]),
    });
    const expected = Uint8Array.from([...GREEN, ...BLUE, ...GREEN, ...BLUE]);
    assert.deepEqual(decodeBmp(file).data, expected);
  });

  it('rejects files that are not BMP, truncated, or of a kind it does not read', () => {
    assert.throws(() => decodeBmp(Buffer.from('PNG not a bitmap at all, really')), BmpDecodeError);
    const whole = bmp24(syntheticPixels(8, 8, 0));
    assert.throws(() => decodeBmp(whole.subarray(0, whole.length - 10)), /truncated/);
    const jpegInside = buildBmp({
      headerSize: 40,
      width: 2,
      height: 2,
      bitsPerPixel: 24,
      compression: 4,
      pixelData: new Uint8Array(16),
    });
    assert.throws(() => decodeBmp(jpegInside), /compression 4/);
  });
});
