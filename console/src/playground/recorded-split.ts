import { api } from '../api';

/** How a request's time divided, as the usage ledger recorded it once the request ended. */
export interface RecordedSplit {
  totalMs: number;
  gatewayMs: number;
  upstreamMs: number | undefined;
}

interface LedgerRow {
  status: number;
  gateway_ms: number;
  upstream_ms: number | null;
}

/** A stand-in row (status 0) holds no timings: the request's own row replaces it when it ends. */
const STAND_IN_STATUS = 0;
const POLL_MS = 250;
/** Past the ledger's default flush (1 s) with room for a busy machine. */
const GIVE_UP_MS = 15_000;

/**
 * A stream's `Server-Timing` header leaves before the upstream's share is known, so after its last
 * event the split is read from the request's ledger row (`/me/usage?request_id=`), polled until
 * the ledger has written it. Undefined when it did not within GIVE_UP_MS or the read was refused.
 */
export async function recordedSplit(requestId: string): Promise<RecordedSplit | undefined> {
  const path = `/me/usage?request_id=${encodeURIComponent(requestId)}`;
  const deadline = Date.now() + GIVE_UP_MS;
  while (Date.now() < deadline) {
    let rows: LedgerRow[];
    try {
      rows = (await api<{ rows: LedgerRow[] }>(path)).rows;
    } catch {
      return undefined;
    }
    const own = rows.find((row) => row.status !== STAND_IN_STATUS);
    if (own !== undefined)
      return {
        totalMs: own.gateway_ms,
        gatewayMs: Math.max(0, own.gateway_ms - (own.upstream_ms ?? 0)),
        upstreamMs: own.upstream_ms ?? undefined,
      };
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  return undefined;
}

/** The split in the words of `Server-Timing`, so that it reads as the header would have. */
export function splitText(split: RecordedSplit): string {
  const entries = [`gateway;dur=${split.gatewayMs}`];
  if (split.upstreamMs !== undefined) entries.push(`upstream;dur=${split.upstreamMs}`);
  return `${entries.join(', ')} (of ${split.totalMs} ms in all)`;
}
