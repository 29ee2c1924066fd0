/**
 * How a crowd's first wave reached the upstream: how long after the first of its calls the median
 * one and the 99th-percentile one arrived. That spread is the time the setup took to take in that
 * many callers at once, and the crowd's p99 is about the upstream's delay plus it.
 */
export interface ArrivalSpread {
  p50Ms: number;
  p99Ms: number;
}

/**
 * The spread of `afterFirstMs` (each call's arrival after the first's), by nearest rank; undefined
 * unless all `expected` calls arrived, since a wave cut short has no p99 to compare.
 */
export function arrivalSpread(
  afterFirstMs: readonly number[],
  expected: number,
): ArrivalSpread | undefined {
  if (expected <= 0 || afterFirstMs.length < expected) return undefined;
  const sorted = afterFirstMs.slice(0, expected).sort((a, b) => a - b);
  const rank = (share: number) => sorted[Math.ceil(share * sorted.length) - 1] as number;
  return { p50Ms: rank(0.5), p99Ms: rank(0.99) };
}
