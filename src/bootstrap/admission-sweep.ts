import type { Log } from '../support/log.js';

/** One part of a sweep: what it does, in the words its failure is reported with, and the work. */
export type SweepPart = readonly [description: string, run: () => Promise<unknown>];

/**
 * One sweep of all the parts. Each part runs whether or not another failed; what failed is
 * passed on, named.
 */
export function sweepOfParts(parts: readonly SweepPart[]): () => Promise<void> {
  return async () => {
    const failures: Error[] = [];
    for (const [part, run] of parts) {
      try {
        await run();
      } catch (error) {
        failures.push(new Error(`${part} failed: ${String(error)}`, { cause: error }));
      }
    }
    if (failures.length === 1) throw failures[0];
    if (failures.length > 1)
      throw new AggregateError(failures, failures.map((failure) => failure.message).join('; '));
  };
}

/** Stops the timer, then waits for a sweep still running. */
export type StopSweeping = () => Promise<void>;

/**
 * Sweeps every `intervalMs`, logging failures. A sweep is many statements (the keys go by
 * batches): one still running skips the next turn, and stopping waits for it, so that none runs
 * on a closed database.
 */
export function sweepEvery(intervalMs: number, sweep: () => Promise<void>, log: Log): StopSweeping {
  let sweeping: Promise<void> | undefined;
  const sweeper = setInterval(() => {
    sweeping ??= sweep()
      .catch((error: unknown) =>
        log.warn({ err: (error as Error).message }, 'the admission sweep failed'),
      )
      .finally(() => (sweeping = undefined));
  }, intervalMs);
  sweeper.unref();
  return async () => {
    clearInterval(sweeper);
    await sweeping;
  };
}
