import type { Rgb } from './colour.js';
import type { RgbCanvas } from './rgb-canvas.js';

/**
 * Where a decoder puts a picture's pixels, row after row (top-down or bottom-up), each pixel at
 * most once, left to right. With `shrink` 1 it is the picture itself. With a larger whole factor
 * each pixel it holds is the mean of a shrink x shrink block of the picture (smaller blocks at
 * the right and bottom edges), summed one row of blocks at a time: only the shrunk picture is
 * ever held, whatever size the picture declares. Pixels never put are `background`.
 */
export class ShrinkingCanvas {
  readonly width: number;
  readonly height: number;
  private readonly data: Uint8Array;
  /** shrink > 1: per block of the current block row, the sum of each channel and the pixels put. */
  private readonly sums: Float64Array;
  private readonly counts: Uint32Array;
  /** shrink > 1: the block of each column of the picture. */
  private readonly blockOfColumn: Uint32Array;
  private blockRow = -1;
  /** shrink 1: where the current row starts in `data`. */
  private rowOffset = 0;

  constructor(
    private readonly sourceWidth: number,
    private readonly sourceHeight: number,
    private readonly shrink: number,
    private readonly background: Rgb,
  ) {
    if (!Number.isInteger(shrink) || shrink < 1) {
      throw new RangeError(`shrink must be a whole number of at least 1, got ${shrink}`);
    }
    this.width = Math.ceil(sourceWidth / shrink);
    this.height = Math.ceil(sourceHeight / shrink);
    this.data = new Uint8Array(this.width * this.height * 3);
    fillRgb(this.data, background);
    const summed = shrink === 1 ? 0 : this.width;
    this.sums = new Float64Array(summed * 3);
    this.counts = new Uint32Array(summed);
    this.blockOfColumn = new Uint32Array(shrink === 1 ? 0 : sourceWidth);
    for (let x = 0; x < this.blockOfColumn.length; x++)
      this.blockOfColumn[x] = Math.floor(x / shrink);
  }

  /** The pixels put next are on row `y` of the picture (0 is the top). */
  startRow(y: number): void {
    if (this.shrink === 1) {
      this.rowOffset = y * this.width * 3;
      return;
    }
    const blockRow = Math.floor(y / this.shrink);
    if (blockRow === this.blockRow) return;
    this.averageBlockRow();
    this.blockRow = blockRow;
  }

  /** Pixel `x` of the current row. */
  put(x: number, r: number, g: number, b: number): void {
    if (this.shrink === 1) {
      const at = this.rowOffset + x * 3;
      this.data[at] = r;
      this.data[at + 1] = g;
      this.data[at + 2] = b;
      return;
    }
    const { sums, counts } = this;
    const block = this.blockOfColumn[x]!;
    const at = block * 3;
    sums[at] = sums[at]! + r;
    sums[at + 1] = sums[at + 1]! + g;
    sums[at + 2] = sums[at + 2]! + b;
    counts[block] = counts[block]! + 1;
  }

  finish(): RgbCanvas {
    this.averageBlockRow();
    return { width: this.width, height: this.height, data: this.data };
  }

  private averageBlockRow(): void {
    if (this.blockRow < 0) return;
    const { shrink, sums, counts, background } = this;
    const rows = Math.min(shrink, this.sourceHeight - this.blockRow * shrink);
    const rowStart = this.blockRow * this.width * 3;
    for (let block = 0; block < this.width; block++) {
      const columns = Math.min(shrink, this.sourceWidth - block * shrink);
      const pixels = rows * columns;
      const unset = pixels - counts[block]!;
      const at = block * 3;
      const target = rowStart + at;
      this.data[target] = Math.round((sums[at]! + background.r * unset) / pixels);
      this.data[target + 1] = Math.round((sums[at + 1]! + background.g * unset) / pixels);
      this.data[target + 2] = Math.round((sums[at + 2]! + background.b * unset) / pixels);
    }
    sums.fill(0);
    counts.fill(0);
    this.blockRow = -1;
  }
}

/** Every pixel of an RGB buffer set to `colour`, by doubling copies rather than a loop per pixel. */
function fillRgb(data: Uint8Array, colour: Rgb): void {
  if (data.length === 0 || (colour.r === 0 && colour.g === 0 && colour.b === 0)) return;
  data[0] = colour.r;
  data[1] = colour.g;
  data[2] = colour.b;
  for (let filled = 3; filled < data.length; filled *= 2) {
    data.copyWithin(filled, 0, Math.min(filled, data.length - filled));
  }
}
