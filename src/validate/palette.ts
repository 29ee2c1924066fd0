import type { PaletteColor } from '../domain/generation-request.js';
import { GatewayError } from '../errors/gateway-error.js';

interface RawPaletteEntry {
  hex: string;
  ratio: string;
}

/**
 * Converts palette entries already checked by the schema (`#RRGGBB`, `NN.NN%`) and requires the
 * ratios to sum to exactly 100.00%. Sums are done in hundredths of a percent, as integers, so that
 * 33.33% + 33.33% + 33.34% is exactly 100.00%.
 */
export function readPalette(entries: readonly RawPaletteEntry[], path: string): PaletteColor[] {
  const colors = entries.map((entry) => ({
    hex: entry.hex.toUpperCase(),
    basisPoints: Number(entry.ratio.slice(0, -1).replace('.', '')),
  }));
  const sum = colors.reduce((total, color) => total + color.basisPoints, 0);
  if (sum !== 10_000) {
    const shown = `${Math.trunc(sum / 100)}.${String(sum % 100).padStart(2, '0')}%`;
    throw new GatewayError('InvalidParameter', `${path}: ratios must sum to 100.00%, got ${shown}`);
  }
  return colors;
}
