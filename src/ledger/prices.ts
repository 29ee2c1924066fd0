import type { ModelId } from '../domain/models.js';

/** Price of one generated image per model, in millionths of the operator's currency unit. */
export type ImagePrices = Readonly<Partial<Record<ModelId, number>>>;

const MICROS = 1_000_000;

/** What `images` images of `model` cost; a model without a price costs nothing. */
export function costOf(prices: ImagePrices, model: string | undefined, images: number): number {
  const price = model === undefined ? undefined : prices[model as ModelId];
  return price === undefined ? 0 : price * images;
}

/** `120000` -> `0.120000`: exact, never through a float. */
export function formatMicros(micros: number): string {
  const sign = micros < 0 ? '-' : '';
  const absolute = Math.abs(Math.round(micros));
  const units = Math.floor(absolute / MICROS);
  const fraction = String(absolute % MICROS).padStart(6, '0');
  return `${sign}${units}.${fraction}`;
}

/** `0.04` -> `40000`; undefined unless a plain decimal with at most 6 decimal places. */
export function parseMicros(text: string): number | undefined {
  const match = /^([0-9]{1,9})(?:\.([0-9]{1,6}))?$/.exec(text.trim());
  if (match === null) return undefined;
  return Number(match[1]) * MICROS + Number((match[2] ?? '').padEnd(6, '0'));
}
