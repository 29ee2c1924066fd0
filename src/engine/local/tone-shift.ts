import type { Rgb } from './colour.js';
import type { RgbCanvas } from './rgb-canvas.js';
import type { SeededRandom } from './seeded-random.js';

/** A per-channel lookup table: output value for each input value 0..255. */
export interface ToneCurve {
  red: Uint8Array;
  green: Uint8Array;
  blue: Uint8Array;
}

/**
 * The image-to-image look: pull every channel part of the way towards a tint, then posterise
 * to a few levels. Strong enough to see at a glance, mild enough that the input stays
 * recognisable (structure and relative brightness are kept).
 */
export function toneCurveFor(random: SeededRandom, tint: Rgb): ToneCurve {
  const amount = random.between(0.1, 0.16);
  const levels = random.integer(8, 12);
  const channel = (target: number) => {
    const table = new Uint8Array(256);
    for (let value = 0; value < 256; value++) {
      const pulled = value + (target - value) * amount;
      table[value] = Math.round(Math.round((pulled / 255) * (levels - 1)) * (255 / (levels - 1)));
    }
    return table;
  };
  return { red: channel(tint.r), green: channel(tint.g), blue: channel(tint.b) };
}

/** Writes `source` through `curve` into `target`; both have the same size. */
export function applyToneCurve(source: RgbCanvas, target: RgbCanvas, curve: ToneCurve): void {
  const input = source.data;
  const output = target.data;
  const { red, green, blue } = curve;
  for (let offset = 0; offset < input.length; offset += 3) {
    output[offset] = red[input[offset]!]!;
    output[offset + 1] = green[input[offset + 1]!]!;
    output[offset + 2] = blue[input[offset + 2]!]!;
  }
}
