/*
 * Runs that yield images as they are produced and return an output (an `EngineRun`, a channel
 * adapter's attempt): the adapter for work that answers at once, and the ways to consume one.
 */

/**
 * `work` as a run that yields nothing and returns what `work` resolves to: an engine or an
 * adapter that answers at once stays a plain async function. `work` starts at the run's first
 * step, so a run never started costs nothing and leaves no promise to reject unheard.
 */
// eslint-disable-next-line require-yield -- answering at once: there is nothing to yield early
export async function* answersAtOnce<Output>(
  work: () => Promise<Output>,
): AsyncGenerator<never, Output, undefined> {
  return work();
}

/** What `run` returns, its yields passed over: for callers that want only the output. */
export async function outputOf<Output>(
  run: AsyncGenerator<unknown, Output, undefined>,
): Promise<Output> {
  let step = await run.next();
  while (step.done !== true) step = await run.next();
  return step.value;
}

/**
 * Ends `run` early, between its steps: its `finally` blocks run (a held turn is given back) and
 * it starts no further work. Resolves once it has.
 */
export async function stopEarly(run: AsyncIterator<unknown, unknown, undefined>): Promise<void> {
  await run.return?.();
}
