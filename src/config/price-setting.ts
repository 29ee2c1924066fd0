import { isModelId, MODEL_IDS } from '../domain/models.js';
import { type ImagePrices, parseMicros } from '../domain/image-prices.js';
import type { Parsed, SettingParser } from './setting-types.js';

/**
 * Prices per image by model: `gen-2.7-image-pro=0.04,txt-image-2.0-pro=0.035` in the
 * environment, or a mapping of model to price in the file. At most 6 decimal places, held as
 * millionths so that sums are exact.
 */
export function priceTableSetting(): SettingParser<ImagePrices> {
  return (raw): Parsed<ImagePrices> => {
    let entries: [string, unknown][];
    if (typeof raw === 'string') {
      entries = [];
      for (const part of raw
        .split(',')
        .map((item) => item.trim())
        .filter((item) => item !== '')) {
        const [model, price, ...rest] = part.split('=');
        if (price === undefined || rest.length > 0)
          return { ok: false, problem: `must be a list of model=price, got "${part}"` };
        entries.push([(model as string).trim(), price.trim()]);
      }
    } else if (typeof raw === 'object' && raw !== null && !Array.isArray(raw)) {
      entries = Object.entries(raw);
    } else {
      return { ok: false, problem: 'must be a mapping of model to price per image' };
    }
    const prices: Partial<Record<(typeof MODEL_IDS)[number], number>> = {};
    for (const [model, price] of entries) {
      if (!isModelId(model))
        return {
          ok: false,
          problem: `names unknown model "${model}"; models are ${MODEL_IDS.join(', ')}`,
        };
      const micros =
        typeof price === 'number'
          ? parseMicros(String(price))
          : typeof price === 'string'
            ? parseMicros(price)
            : undefined;
      if (micros === undefined)
        return {
          ok: false,
          problem: `price of ${model} must be a non-negative decimal with at most 6 decimal places`,
        };
      prices[model] = micros;
    }
    return { ok: true, value: prices };
  };
}
