import { type ImagePrices, MICROS_PER_UNIT } from '../domain/image-prices.js';
import type { ModelId } from '../domain/models.js';

/** What `images` images of `model` cost; a model without a price costs nothing. */
export function costOf(prices: ImagePrices, model: string | undefined, images: number): number {
  const price = model === undefined ? undefined : prices[model as ModelId];
  return price === undefined ? 0 : price * images;
}

/** `120000` -> `0.120000`: exact, never through a float. */
export function formatMicros(micros: number): string {
  const sign = micros < 0 ? '-' : '';
  const absolute = Math.abs(Math.round(micros));
  const units = Math.floor(absolute / MICROS_PER_UNIT);
  const fraction = String(absolute % MICROS_PER_UNIT).padStart(6, '0');
  return `${sign}${units}.${fraction}`;
}
