import type { PaletteColor, PixelSize } from '../../domain/generation-request.js';
import { hexToRgb, lumaOf } from './colour.js';
import type { PixelBox } from './pixel-box.js';
import type { RgbCanvas } from './rgb-canvas.js';

/** Per-pixel role in palette painting, one byte a pixel. */
export const PaletteArea = {
  /** Left as it is (outside the edited boxes). */
  untouched: 0,
  /** Painted, and counted towards the colour shares. */
  counted: 1,
  /** Painted but not counted: under the watermark, which covers it anyway. */
  uncounted: 2,
} as const;

/**
 * Which pixels the palette paints: the whole image, or the edited boxes given as a 0/1 mask;
 * pixels inside `excluded` (the watermark's box) are painted but not counted.
 */
export function paletteArea(
  size: PixelSize,
  editMask: Uint8Array | undefined,
  excluded: PixelBox | undefined,
): Uint8Array {
  // The edit mask's 1s are PaletteArea.counted, its 0s PaletteArea.untouched.
  const area =
    editMask?.slice() ?? new Uint8Array(size.width * size.height).fill(PaletteArea.counted);
  if (excluded !== undefined) {
    for (let y = excluded.y; y < excluded.y + excluded.height; y++) {
      for (let x = excluded.x; x < excluded.x + excluded.width; x++) {
        const pixel = y * size.width + x;
        if (area[pixel] === PaletteArea.counted) area[pixel] = PaletteArea.uncounted;
      }
    }
  }
  return area;
}

const UNTOUCHED = PaletteArea.untouched;
const COUNTED = PaletteArea.counted;
const MIXED = 0xff;
const KEY_COUNT = 1 << 16;

/**
 * Repaints the area in palette colours only, each covering exactly its share of the counted
 * pixels (to one pixel). Pixels are ranked by luma, ties broken by a diagonal position so that
 * a flat region split between two colours splits along a straight edge rather than noise; the
 * darkest colour takes the darkest ranks. The picture underneath survives as a posterised image.
 */
export function paintPalette(
  canvas: RgbCanvas,
  palette: readonly PaletteColor[],
  area: Uint8Array,
): void {
  const colours = palette
    .map((entry) => ({ ...entry, rgb: hexToRgb(entry.hex) }))
    .sort((a, b) => lumaOf(a.rgb) - lumaOf(b.rgb));
  const { keys, counts, total } = rankKeys(canvas, area);
  // Colour j takes ranks [ends[j - 1], ends[j]) of the counted pixels.
  let cumulative = 0;
  const ends = colours.map((colour) => {
    cumulative += colour.basisPoints;
    return Math.round((total * cumulative) / 10_000);
  });
  const buckets = bucketColours(counts, ends);
  const red = Uint8Array.from(colours, (colour) => colour.rgb.r);
  const green = Uint8Array.from(colours, (colour) => colour.rgb.g);
  const blue = Uint8Array.from(colours, (colour) => colour.rgb.b);

  const data = canvas.data;
  const { single, firstRank, nextRank } = buckets;
  for (let pixel = 0; pixel < area.length; pixel++) {
    const role = area[pixel];
    if (role === UNTOUCHED) continue;
    const key = keys[pixel]!;
    let colour = role === COUNTED ? single[key]! : firstRank[key]!;
    if (colour === MIXED) colour = colourOfRank(ends, nextRank[key]!++);
    const offset = pixel * 3;
    data[offset] = red[colour]!;
    data[offset + 1] = green[colour]!;
    data[offset + 2] = blue[colour]!;
  }
}

/** A 16-bit sort key per painted pixel (luma, then diagonal position) and a histogram of keys. */
function rankKeys(
  canvas: RgbCanvas,
  area: Uint8Array,
): { keys: Uint16Array; counts: Uint32Array; total: number } {
  const { width, height, data } = canvas;
  const keys = new Uint16Array(width * height);
  const counts = new Uint32Array(KEY_COUNT);
  const columnPart = Uint8Array.from({ length: width }, (_, x) => Math.floor((x * 32) / width));
  let total = 0;
  for (let y = 0, pixel = 0; y < height; y++) {
    const rowPart = Math.floor((y * 32) / height);
    for (let x = 0; x < width; x++, pixel++) {
      const role = area[pixel];
      if (role === UNTOUCHED) continue;
      const offset = pixel * 3;
      const luma = (data[offset]! * 77 + data[offset + 1]! * 150 + data[offset + 2]! * 29) >> 6;
      const key = (luma << 6) | (columnPart[x]! + rowPart);
      keys[pixel] = key;
      if (role === COUNTED) {
        counts[key]!++;
        total++;
      }
    }
  }
  return { keys, counts, total };
}

interface BucketColours {
  /** The colour of every counted pixel with this key, or MIXED when the key straddles two. */
  single: Uint8Array;
  /** The colour at the key's first rank, for uncounted pixels (which take no rank). */
  firstRank: Uint8Array;
  /** The next rank to hand out within the key, for MIXED keys. */
  nextRank: Uint32Array;
}

function bucketColours(counts: Uint32Array, ends: readonly number[]): BucketColours {
  const single = new Uint8Array(KEY_COUNT);
  const firstRank = new Uint8Array(KEY_COUNT);
  const nextRank = new Uint32Array(KEY_COUNT);
  for (let key = 0, start = 0; key < KEY_COUNT; key++) {
    const count = counts[key]!;
    const first = colourOfRank(ends, start);
    firstRank[key] = first;
    single[key] = count === 0 || colourOfRank(ends, start + count - 1) === first ? first : MIXED;
    nextRank[key] = start;
    start += count;
  }
  return { single, firstRank, nextRank };
}

function colourOfRank(ends: readonly number[], rank: number): number {
  for (let index = 0; index < ends.length; index++) if (rank < ends[index]!) return index;
  return ends.length - 1;
}
