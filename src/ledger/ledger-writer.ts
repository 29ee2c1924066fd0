import type { UsageRow } from '../domain/usage-row.js';

/** Where the rows of requests that billed nothing go; BatchingLedger writes them in batches. */
export interface LedgerWriter {
  record(row: UsageRow): void;
}
