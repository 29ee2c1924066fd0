/** Thrown by a readiness check: names every dependency that is not reachable now. */
export class NotReadyError extends Error {
  constructor(readonly failing: readonly string[]) {
    super(`not ready: ${failing.join(', ')} not reachable`);
    this.name = 'NotReadyError';
  }
}

/** One check over several dependencies, run together; rejects with all that failed. */
export function readinessOf(checks: Record<string, () => Promise<void>>): () => Promise<void> {
  return async () => {
    const names = Object.keys(checks);
    const results = await Promise.allSettled(
      names.map((name) => (checks[name] as () => Promise<void>)()),
    );
    const failing = names.filter((_, index) => results[index]?.status === 'rejected');
    if (failing.length > 0) throw new NotReadyError(failing);
  };
}
