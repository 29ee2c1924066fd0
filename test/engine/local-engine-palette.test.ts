import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LocalEngine } from '../../src/engine/local/local-engine.js';
import { mapBoxToOutput } from '../../src/engine/local/pixel-box.js';
import { watermarkBox } from '../../src/engine/local/watermark.js';
import {
  body,
  colourCounts,
  contains,
  decode,
  jobFor,
  MODEL_A,
  maxAbsoluteDifference,
  type Pixels,
  pngBytes,
  resized,
  syntheticInput,
} from './engine-fixtures.js';
import { outputOf } from '../../src/engine/engine-run.js';

const engine = new LocalEngine();

type Palette = { hex: string; ratio: string }[];

const THREE: Palette = [
  { hex: '#112233', ratio: '40.00%' },
  { hex: '#E4A11B', ratio: '35.50%' },
  { hex: '#8FC1E3', ratio: '24.50%' },
];
const THIRDS: Palette = [
  { hex: '#FF0000', ratio: '33.33%' },
  { hex: '#00FF00', ratio: '33.33%' },
  { hex: '#0000FF', ratio: '33.34%' },
];
const EIGHT: Palette = [
  { hex: '#0B132B', ratio: '5.00%' },
  { hex: '#1C2541', ratio: '10.00%' },
  { hex: '#3A506B', ratio: '15.00%' },
  { hex: '#5BC0BE', ratio: '20.00%' },
  { hex: '#6FFFE9', ratio: '20.00%' },
  { hex: '#F4D35E', ratio: '12.50%' },
  { hex: '#EE964B', ratio: '12.25%' },
  { hex: '#F95738', ratio: '5.25%' },
];
const TEN_WITH_TINY_SHARES: Palette = [
  { hex: '#000000', ratio: '0.50%' },
  { hex: '#FFFFFF', ratio: '50.00%' },
  { hex: '#808080', ratio: '0.50%' },
  { hex: '#FF0000', ratio: '10.00%' },
  { hex: '#FE0000', ratio: '10.00%' },
  { hex: '#00FF00', ratio: '9.00%' },
  { hex: '#0000FF', ratio: '5.00%' },
  { hex: '#FFFF00', ratio: '5.00%' },
  { hex: '#00FFFF', ratio: '5.00%' },
  { hex: '#FF00FF', ratio: '5.00%' },
];

/** Asserts only palette colours appear where `include` looks, each within 2 points of its ratio. */
function assertPaletteShares(
  pixels: Pixels,
  palette: Palette,
  include: (x: number, y: number) => boolean,
): void {
  const counts = colourCounts(pixels, include);
  const total = [...counts.values()].reduce((sum, count) => sum + count, 0);
  assert.ok(total > 0);
  const wanted = new Map<string, number>();
  for (const entry of palette) {
    wanted.set(entry.hex, (wanted.get(entry.hex) ?? 0) + Number.parseFloat(entry.ratio));
  }
  for (const colour of counts.keys()) {
    assert.ok(wanted.has(colour), `colour ${colour} is not in the palette`);
  }
  for (const [hex, percent] of wanted) {
    const actual = ((counts.get(hex) ?? 0) / total) * 100;
    assert.ok(Math.abs(actual - percent) <= 2, `${hex}: ${actual.toFixed(2)}% for ${percent}%`);
  }
}

describe('LocalEngine color_palette', () => {
  for (const [name, palette] of [
    ['3 colours', THREE],
    ['thirds', THIRDS],
    ['8 colours', EIGHT],
    ['10 colours with tiny shares and near-duplicates', TEN_WITH_TINY_SHARES],
  ] as const) {
    it(`paints only the palette, at its ratios, outside the watermark (${name})`, async () => {
      for (const seed of [3, 4]) {
        const requestBody = body(MODEL_A, 'harbour at night', {
          size: '1024*768',
          color_palette: palette,
          watermark: true,
        });
        const output = await outputOf(engine.generate(jobFor(requestBody, { seed })));
        const pixels = await decode(pngBytes(output));
        const box = watermarkBox(pixels.width, pixels.height);
        assertPaletteShares(pixels, palette, (x, y) => !contains(box, x, y));
      }
    });
  }

  it('covers the whole image when there is no watermark', async () => {
    const output = await outputOf(
      engine.generate(
        jobFor(body(MODEL_A, 'harbour at night', { size: '768*768', color_palette: THREE })),
      ),
    );
    assertPaletteShares(await decode(pngBytes(output)), THREE, () => true);
  });

  it('keeps the input recognisable in image-to-image: brighter input areas take lighter colours', async () => {
    const input = await syntheticInput(800, 600, 0, 'jpeg');
    const requestBody = body(MODEL_A, 'poster', { size: '1024*768', color_palette: THIRDS }, 1);
    const output = await outputOf(engine.generate(jobFor(requestBody, { inputs: [input] })));
    const pixels = await decode(pngBytes(output));
    assertPaletteShares(pixels, THIRDS, () => true);

    // Mean input luma under each palette colour follows the colours' own luma order.
    const reference = await resized(input.bytes(), pixels.width, pixels.height);
    const sums = new Map<string, { luma: number; count: number }>();
    for (let pixel = 0; pixel < pixels.width * pixels.height; pixel++) {
      const offset = pixel * 3;
      const hex = `${pixels.data[offset]},${pixels.data[offset + 1]},${pixels.data[offset + 2]}`;
      const luma =
        reference.data[offset]! * 0.3 +
        reference.data[offset + 1]! * 0.59 +
        reference.data[offset + 2]! * 0.11;
      const entry = sums.get(hex) ?? { luma: 0, count: 0 };
      sums.set(hex, { luma: entry.luma + luma, count: entry.count + 1 });
    }
    const mean = (key: string) => {
      const entry = sums.get(key);
      assert.ok(entry !== undefined, key);
      return entry.luma / entry.count;
    };
    // Luma order of the palette: blue < red < green.
    assert.ok(mean('0,0,255') < mean('255,0,0'));
    assert.ok(mean('255,0,0') < mean('0,255,0'));
  });

  it('paints only the edited boxes in interactive editing, at the ratios within them', async () => {
    const input = await syntheticInput(800, 600, 1, 'png');
    const boxes = [
      [80, 60, 420, 330],
      [500, 300, 760, 560],
    ];
    const requestBody = body(
      MODEL_A,
      'repaint these areas',
      { size: '1024*768', color_palette: EIGHT, bbox_list: [boxes], watermark: true },
      1,
    );
    const output = await outputOf(engine.generate(jobFor(requestBody, { inputs: [input] })));
    const pixels = await decode(pngBytes(output));
    const mapped = boxes.map((box) =>
      mapBoxToOutput(box as [number, number, number, number], input, pixels),
    );
    const watermark = watermarkBox(pixels.width, pixels.height);
    const inBoxes = (x: number, y: number) => mapped.some((box) => contains(box, x, y));
    assertPaletteShares(pixels, EIGHT, (x, y) => inBoxes(x, y) && !contains(watermark, x, y));
    const reference = await resized(input.bytes(), pixels.width, pixels.height);
    const untouched = (x: number, y: number) => !inBoxes(x, y) && !contains(watermark, x, y);
    assert.ok(maxAbsoluteDifference(pixels, reference, untouched) <= 2);
  });
});
