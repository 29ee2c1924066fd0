import { BmpDecodeError } from './bmp-decode-error.js';
import { Compression, type BmpHeader } from './bmp-header.js';
import type { ShrinkingCanvas } from './shrinking-canvas.js';

/**
 * RLE8 and RLE4 (always bottom-up). Pixels the stream skips keep the canvas's background
 * (palette entry 0). The work is bounded by the file, not by the size it declares: each step
 * reads at least two bytes, a run stops at its row's end (the rest of it is skipped, not
 * walked), and the position only moves right and up, so no pixel is written twice.
 */
export function decodeRunLength(
  bytes: Uint8Array,
  header: BmpHeader,
  canvas: ShrinkingCanvas,
): void {
  const { width, height, palette } = header;
  const four = header.compression === Compression.rle4;
  let at = header.pixelOffset;
  let x = 0;
  let row = 0;
  const read = () => {
    if (at >= bytes.length) throw new BmpDecodeError('RLE data truncated');
    return bytes[at++]!;
  };
  const put = (column: number, index: number) => {
    canvas.put(column, palette[index * 3]!, palette[index * 3 + 1]!, palette[index * 3 + 2]!);
  };
  const moveUp = (rows: number) => {
    row += rows;
    if (row < height) canvas.startRow(height - 1 - row);
  };
  moveUp(0);
  while (row < height) {
    if (at + 2 > bytes.length) throw new BmpDecodeError('RLE data truncated');
    const count = bytes[at]!;
    const value = bytes[at + 1]!;
    at += 2;
    if (count > 0) {
      const inRow = Math.max(0, Math.min(count, width - x));
      for (let i = 0; i < inRow; i++) {
        put(x + i, four ? (i % 2 === 0 ? value >> 4 : value & 0x0f) : value);
      }
      x += count;
    } else if (value === 0) {
      x = 0;
      moveUp(1);
    } else if (value === 1) {
      return;
    } else if (value === 2) {
      x += read();
      moveUp(read());
    } else {
      const run = value;
      const runBytes = four ? Math.ceil(run / 2) : run;
      if (at + runBytes > bytes.length) throw new BmpDecodeError('RLE data truncated');
      const inRow = Math.max(0, Math.min(run, width - x));
      for (let i = 0; i < inRow; i++) {
        const byte = bytes[at + (four ? i >> 1 : i)]!;
        put(x + i, four ? (i % 2 === 0 ? byte >> 4 : byte & 0x0f) : byte);
      }
      x += run;
      at += runBytes + (runBytes % 2);
    }
  }
}
