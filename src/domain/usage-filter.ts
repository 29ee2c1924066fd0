export interface UsageFilter {
  /** Inclusive, milliseconds since the epoch. */
  since?: number;
  /** Exclusive, milliseconds since the epoch. */
  until?: number;
  tokenId?: string;
  account?: string;
  /** The rows of one request (a stand-in row and the request's own, before it replaces it). */
  requestId?: string;
}

export type UsageGrouping = 'day' | 'model' | 'token';
export const USAGE_GROUPINGS: readonly UsageGrouping[] = ['day', 'model', 'token'];

/** Ledger rows added up over a group: a day (UTC, `YYYY-MM-DD`), a model or a token. */
export interface UsageSummary {
  key: string;
  requests: number;
  succeeded: number;
  failed: number;
  imagesRequested: number;
  imagesReceived: number;
  imagesDelivered: number;
  imagesBilled: number;
  costMicros: number;
}
