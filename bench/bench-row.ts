/** One line of the benchmark table. */
export interface BenchRow {
  /** What was measured, e.g. "local engine, 2K text-to-image". */
  name: string;
  /** The figure: a median time, a rate, or a size. */
  value: number;
  unit: 'ms' | 'µs' | 'req/s' | 'MB' | 'KB' | 'ops/s' | 'k instr' | 'per request';
  /** Iterations or other context, e.g. "median of 20". */
  note?: string;
}

/** A benchmark file's default export. */
export type Bench = () => Promise<BenchRow[]>;

/** Runs `task` `iterations` times after `warmup` runs and returns the median in milliseconds. */
export async function medianMs(
  task: () => Promise<unknown> | unknown,
  iterations: number,
  warmup = 1,
): Promise<number> {
  for (let i = 0; i < warmup; i++) await task();
  const times: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const start = process.hrtime.bigint();
    await task();
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)] as number;
}
