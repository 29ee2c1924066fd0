import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LocalEngine } from '../../src/engine/local/local-engine.js';
import { watermarkBox, watermarkInk } from '../../src/engine/local/watermark.js';
import {
  body,
  contains,
  decode,
  jobFor,
  MODEL_A,
  MODEL_B,
  maxAbsoluteDifference,
  type Pixels,
  pngBytes,
} from './engine-fixtures.js';
import { outputOf } from '../../src/engine/engine-run.js';

const engine = new LocalEngine();

async function renderPair(model: string, size: string): Promise<[Pixels, Pixels]> {
  const render = async (watermark: boolean) =>
    decode(
      pngBytes(
        await outputOf(engine.generate(jobFor(body(model, 'a quiet street', { size, watermark })))),
      ),
    );
  return [await render(true), await render(false)];
}

describe('watermark geometry', () => {
  for (const [width, height] of [
    [1024, 1024],
    [4096, 4096],
    [768, 768],
    [272, 2176],
    [2176, 272],
    [512, 512],
  ] as const) {
    it(`sits inside the bottom-right corner of ${width}x${height}`, () => {
      const box = watermarkBox(width, height);
      const right = width - (box.x + box.width);
      const bottom = height - (box.y + box.height);
      assert.ok(box.x >= 0 && box.y >= 0 && right >= 0 && bottom >= 0);
      assert.equal(right, bottom);
      assert.ok(right < Math.min(width, height) * 0.05);
      assert.ok(box.width > box.height * 2, 'wide enough for four glyphs');
      assert.ok(box.height >= 12, 'tall enough to read');
    });
  }

  it('grows with the image', () => {
    assert.ok(watermarkBox(4096, 4096).height > 3 * watermarkBox(1024, 1024).height);
  });
});

describe('watermark rendering', () => {
  for (const [model, size] of [
    [MODEL_A, '1024*768'],
    [MODEL_B, '512*1024'],
  ] as const) {
    it(`changes only its box, and writes light glyphs on a dark backing (${model} ${size})`, async () => {
      const [marked, plain] = await renderPair(model, size);
      const box = watermarkBox(marked.width, marked.height);
      assert.equal(
        maxAbsoluteDifference(marked, plain, (x, y) => !contains(box, x, y)),
        0,
        'nothing outside the box changes',
      );
      const { ink } = watermarkInk(marked.width, marked.height);
      let inked = 0;
      for (let row = 0; row < box.height; row++) {
        for (let column = 0; column < box.width; column++) {
          const coverage = ink[row * box.width + column]!;
          const offset = ((box.y + row) * marked.width + box.x + column) * 3;
          const channels = [0, 1, 2].map((channel) => marked.data[offset + channel]!);
          if (coverage === 255) {
            inked++;
            assert.ok(Math.min(...channels) >= 250, `glyph pixel ${column},${row} is light`);
          } else if (coverage === 0) {
            assert.ok(Math.max(...channels) <= 80, `backing pixel ${column},${row} is dark`);
          }
        }
      }
      const share = inked / (box.width * box.height);
      assert.ok(share > 0.08 && share < 0.4, `ink covers ${(share * 100).toFixed(1)}% of the box`);
    });
  }

  it('draws four separate glyphs: A, I, 生, 成 from left to right', () => {
    const { box, ink } = watermarkInk(1024, 1024);
    const inkedColumns = Array.from({ length: box.width }, (_, column) => {
      for (let row = 0; row < box.height; row++)
        if (ink[row * box.width + column]! > 128) return true;
      return false;
    });
    let runs = 0;
    for (let column = 0; column < box.width; column++) {
      if (inkedColumns[column] && !inkedColumns[column - 1]) runs++;
    }
    assert.equal(runs, 4);
  });
});
