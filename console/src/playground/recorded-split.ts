import { api } from '../api';

/** How a request's time divided, as the usage ledger recorded it once the request ended. */
export interface RecordedSplit {
  totalMs: number;
  gatewayMs: number;
  queueMs: number | undefined;
  upstreamMs: number | undefined;
  storageMs: number | undefined;
}

interface LedgerRow {
  status: number;
  gateway_ms: number;
  upstream_ms: number | null;
  queue_ms: number | null;
  storage_ms: number | null;
}

/** A stand-in row (status 0) holds no timings: the request's own row replaces it when it ends. */
const STAND_IN_STATUS = 0;
const POLL_MS = 250;
/**
 * How long before the gateway's `Date` the lookup starts: the ledger has no request-id index, so
 * a lookup is bounded by time (and by the token) to stay quick (docs/admin-api.md).
 */
const SINCE_MARGIN_MS = 5 * 60_000;
/** Past the ledger's default flush (1 s) with room for a busy machine. */
const GIVE_UP_MS = 15_000;

/**
 * A stream's `Server-Timing` header leaves before the upstream's share is known, so after its last
 * event the split is read from the request's ledger row (`/me/usage?request_id=`), polled until
 * the ledger has written it. Undefined when it did not within GIVE_UP_MS or the read was refused.
 * `answeredAt` is the answer's `Date` header, the gateway's clock.
 */
export async function recordedSplit(
  requestId: string,
  answeredAt: string | undefined,
): Promise<RecordedSplit | undefined> {
  const dated = Date.parse(answeredAt ?? '');
  const since = new Date((Number.isNaN(dated) ? Date.now() : dated) - SINCE_MARGIN_MS);
  const path = `/me/usage?request_id=${encodeURIComponent(requestId)}&since=${since.toISOString()}`;
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
        queueMs: own.queue_ms ?? undefined,
        upstreamMs: own.upstream_ms ?? undefined,
        storageMs: own.storage_ms ?? undefined,
      };
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  return undefined;
}

/** The split in the words of `Server-Timing`, so that it reads as the header would have. */
export function splitText(split: RecordedSplit): string {
  const entries = [`gateway;dur=${split.gatewayMs}`];
  if (split.queueMs !== undefined) entries.push(`queue;dur=${split.queueMs}`);
  if (split.upstreamMs !== undefined) entries.push(`upstream;dur=${split.upstreamMs}`);
  if (split.storageMs !== undefined) entries.push(`storage;dur=${split.storageMs}`);
  return `${entries.join(', ')} (of ${split.totalMs} ms in all)`;
}
