import type { ModelId } from './models.js';

/** Price of one generated image per model, in millionths of the operator's currency unit. */
export type ImagePrices = Readonly<Partial<Record<ModelId, number>>>;

/** Prices and costs are held in millionths of a unit, so that sums are exact. */
export const MICROS_PER_UNIT = 1_000_000;

/** `0.04` -> `40000`; undefined unless a plain decimal with at most 6 decimal places. */
export function parseMicros(text: string): number | undefined {
  const match = /^([0-9]{1,9})(?:\.([0-9]{1,6}))?$/.exec(text.trim());
  if (match === null) return undefined;
  return Number(match[1]) * MICROS_PER_UNIT + Number((match[2] ?? '').padEnd(6, '0'));
}
