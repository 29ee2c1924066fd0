import type { RequestAccount } from '../ledger/request-account.js';
import type { StageTimes } from '../metrics/request-outcome.js';

/**
 * Where a request's `totalMs` went, from what the pipeline noted on its account. Without an
 * account (the request was refused before accounting began) all of it was the gateway's.
 */
export function stageTimesOf(account: RequestAccount | undefined, totalMs: number): StageTimes {
  const upstreamMs = account?.upstreamMs;
  return {
    totalMs,
    gatewayMs: Math.max(0, totalMs - (upstreamMs ?? 0)),
    upstreamMs,
    storageMs: account?.storageMs,
    queueMs: account?.queueMs,
  };
}
