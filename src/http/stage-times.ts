import type { GenerationOutcome } from '../ledger/generation-outcome.js';
import type { StageTimes } from '../metrics/finished-request.js';

/**
 * Where a request's `totalMs` went, from what its work came to. Without an outcome (the request
 * was refused before any work) all of it was the gateway's.
 */
export function stageTimesOf(outcome: GenerationOutcome | undefined, totalMs: number): StageTimes {
  const upstreamMs = outcome?.upstreamMs;
  return {
    totalMs,
    gatewayMs: Math.max(0, totalMs - (upstreamMs ?? 0)),
    upstreamMs,
    storageMs: outcome?.storageMs,
    queueMs: outcome?.queueMs,
  };
}
