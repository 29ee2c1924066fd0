import type { Cancellation } from '../../src/support/cancellation.js';

/** Settles once `cancellation` is aborted (at once if it is already). */
export function aborted(cancellation: Cancellation): Promise<void> {
  if (cancellation.aborted) return Promise.resolve();
  return new Promise((resolve) => cancellation.addEventListener('abort', resolve));
}
