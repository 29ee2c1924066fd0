/** Thrown by a readiness check: names every dependency that is not reachable now. */
export class NotReadyError extends Error {
  constructor(readonly failing: readonly string[]) {
    super(`not ready: ${failing.join(', ')} not reachable`);
    this.name = 'NotReadyError';
  }
}

/** Longest a readiness check waits on one dependency: a frozen one counts as unreachable. */
export const READINESS_TIMEOUT_MS = 2000;

/** One check over several dependencies, run together; rejects with all that failed or hung. */
export function readinessOf(
  checks: Record<string, () => Promise<void>>,
  timeoutMs = READINESS_TIMEOUT_MS,
): () => Promise<void> {
  return async () => {
    const names = Object.keys(checks);
    const results = await Promise.allSettled(
      names.map((name) => withinTime((checks[name] as () => Promise<void>)(), timeoutMs)),
    );
    const failing = names.filter((_, index) => results[index]?.status === 'rejected');
    if (failing.length > 0) throw new NotReadyError(failing);
  };
}

function withinTime(check: Promise<void>, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  return Promise.race([check, late]).finally(() => clearTimeout(timer));
}
