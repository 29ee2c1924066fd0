import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeBmp } from '../../src/engine/local/bmp-decoder.js';
import { LocalEngine } from '../../src/engine/local/local-engine.js';
import { bmp24, buildBmp, emptyRleBomb, longRunRleBomb } from './bmp-fixtures.js';
import { body, jobFor, loadedImage, MODEL_A, syntheticPixels } from './engine-fixtures.js';
import { outputOf } from '../../src/engine/engine-run.js';

const PALETTE = [
  [200, 10, 10],
  [10, 200, 10],
  [10, 10, 200],
  [250, 250, 250],
] as const;

/** Each pixel of the result the rounded mean of a shrink x shrink block of `full`. */
function boxMean(
  full: { width: number; height: number; data: Uint8Array },
  shrink: number,
): Uint8Array {
  const width = Math.ceil(full.width / shrink);
  const height = Math.ceil(full.height / shrink);
  const data = new Uint8Array(width * height * 3);
  for (let by = 0; by < height; by++) {
    for (let bx = 0; bx < width; bx++) {
      const sums = [0, 0, 0];
      let pixels = 0;
      for (let y = by * shrink; y < Math.min(full.height, (by + 1) * shrink); y++) {
        for (let x = bx * shrink; x < Math.min(full.width, (bx + 1) * shrink); x++) {
          for (let channel = 0; channel < 3; channel++) {
            sums[channel]! += full.data[(y * full.width + x) * 3 + channel]!;
          }
          pixels++;
        }
      }
      for (let channel = 0; channel < 3; channel++) {
        data[(by * width + bx) * 3 + channel] = Math.round(sums[channel]! / pixels);
      }
    }
  }
  return data;
}

describe('BMP decoding bounded by what the bytes hold', () => {
  it('walks an RLE8 stream of runs far past the row end in time bounded by its bytes', () => {
    // 2 million runs of 255 pixels on one 8000-pixel row: half a billion steps if walked.
    const bomb = longRunRleBomb(4_000_000, 8000, 1000);
    const started = performance.now();
    const decoded = decodeBmp(bomb);
    const elapsedMs = performance.now() - started;
    assert.ok(elapsedMs < 1_000, `decoding took ${elapsedMs.toFixed(0)} ms`);
    const pixel = (x: number, y: number) => decoded.data[(y * 8000 + x) * 3];
    // Run k paints grey k on the bottom row; the rest keeps palette entry 0 (black).
    assert.deepEqual(
      [pixel(0, 999), pixel(255, 999), pixel(7999, 999), pixel(0, 998), pixel(7999, 0)],
      [0, 1, 31, 0, 0],
    );
  });

  it('holds only the shrunk picture: a 1 KB RLE8 file declaring 8000x8000 decodes to 1000x1000 at shrink 8', () => {
    const bomb = emptyRleBomb(8000);
    assert.ok(bomb.length < 1_100, `${bomb.length} bytes`);
    const decoded = decodeBmp(bomb, 8);
    assert.deepEqual([decoded.width, decoded.height, decoded.data.length], [1000, 1000, 3_000_000]);
    assert.ok(decoded.data.every((value) => value === 0));
  });

  it('box-shrinks every kind it reads to the mean of each block, partial edge blocks included', () => {
    const truecolour = bmp24(syntheticPixels(37, 23, 1));
    // RLE with encoded and absolute runs, deltas, early ends of line and a run past the row's
    // end: skipped pixels keep palette entry 0.
    const rle8 = buildBmp({
      headerSize: 40,
      width: 11,
      height: 7,
      bitsPerPixel: 8,
      compression: 1,
      palette: PALETTE,
      pixelData: Uint8Array.from([
        ...[5, 2, 0, 3, 3, 1, 2, 0, 0, 0],
        ...[0, 2, 3, 2, 4, 1],
        ...[0, 0, 14, 3, 0, 1],
      ]),
    });
    const rle4 = buildBmp({
      headerSize: 40,
      width: 9,
      height: 5,
      bitsPerPixel: 4,
      compression: 2,
      palette: PALETTE,
      pixelData: Uint8Array.from([
        ...[7, 0x12, 0, 0],
        ...[4, 0x33, 0, 5, 0x12, 0x30, 0x21, 0, 0, 0],
        ...[0, 2, 5, 1, 6, 0x21, 0, 1],
      ]),
    });
    for (const [name, file] of [
      ['24-bit', truecolour],
      ['RLE8', rle8],
      ['RLE4', rle4],
    ] as const) {
      const full = decodeBmp(file);
      for (const shrink of [2, 3, 4]) {
        const shrunk = decodeBmp(file, shrink);
        assert.deepEqual(
          [shrunk.width, shrunk.height],
          [Math.ceil(full.width / shrink), Math.ceil(full.height / shrink)],
          `${name} at ${shrink}`,
        );
        assert.deepEqual(shrunk.data, boxMean(full, shrink), `${name} at ${shrink}`);
      }
    }
  });

  it('refuses an uncompressed BMP too short for the rows it declares', () => {
    const declared = buildBmp({
      headerSize: 40,
      width: 8000,
      height: 8000,
      bitsPerPixel: 24,
      pixelData: new Uint8Array(64),
    });
    assert.throws(() => decodeBmp(declared, 8), /pixel data truncated/);
  });

  it('answers a request with nine 1 KB BMPs declaring 8000x8000 in about the time of a plain one', async () => {
    const engine = new LocalEngine({ workers: 1 });
    try {
      const inputs = Array.from({ length: 9 }, (_, index) =>
        loadedImage(emptyRleBomb(8000), 'bmp', 8000, 8000, index),
      );
      const job = () => jobFor(body(MODEL_A, 'x', { size: '2K' }, 9), { inputs });
      const started = performance.now();
      const output = await outputOf(engine.generate(job()));
      const elapsedMs = performance.now() - started;
      assert.deepEqual([output.width, output.height], [2048, 2048]);
      // Decoding each at full size took seconds and held 192 MB apiece.
      assert.ok(elapsedMs < 4_000, `took ${elapsedMs.toFixed(0)} ms`);
    } finally {
      await engine.close();
    }
  });
});
