import { parseDuration } from '../support/duration.js';
import { holdsControlCharacter } from '../support/stored-text.js';
import {
  USAGE_GROUPINGS,
  type UsageFilter,
  type UsageGrouping,
  type UsageSummary,
} from '../domain/usage-filter.js';
import type { UsageRow } from '../domain/usage-row.js';
import { echoQuoted } from '../errors/echo.js';

/** A question to the usage ledger, as the CLI and GET /admin/usage both ask it. */
export interface UsageQuery {
  filter: UsageFilter;
  grouping: UsageGrouping | undefined;
  /** Rows listed when not grouping. */
  limit: number;
}

export interface UsageQueryText {
  since?: string | undefined;
  until?: string | undefined;
  token?: string | undefined;
  account?: string | undefined;
  requestId?: string | undefined;
  groupBy?: string | undefined;
  limit?: string | undefined;
}

export const DEFAULT_ROW_LIMIT = 1000;
export const MAX_ROW_LIMIT = 100_000;

export interface UsageReader {
  list(filter: UsageFilter, limit: number): Promise<UsageRow[]>;
  summarize(filter: UsageFilter, grouping?: UsageGrouping): Promise<UsageSummary[]>;
}

export interface UsageAnswer {
  grouping: UsageGrouping | undefined;
  rows: UsageRow[];
  groups: UsageSummary[];
  totals: UsageSummary;
}

export class UsageQueryError extends Error {
  constructor(
    readonly field: string,
    problem: string,
  ) {
    super(`${field}: ${problem}`);
    this.name = 'UsageQueryError';
  }
}

/**
 * Reads a time bound: `2024-05-01` (UTC midnight), a full ISO 8601 time, or a duration back from
 * now such as `24h` or `7d`.
 */
export function parseTimeBound(text: string, now: number): number | undefined {
  const ago = parseDuration(text);
  if (ago !== undefined) return now - ago * 1000;
  if (!/^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(text.trim()))
    return undefined;
  const date = /^\d{4}-\d{2}-\d{2}$/.test(text.trim()) ? `${text.trim()}T00:00:00Z` : text.trim();
  const time = Date.parse(date);
  return Number.isNaN(time) ? undefined : time;
}

/** Turns the text of CLI options or query parameters into a query; UsageQueryError names the bad one. */
export function readUsageQuery(
  text: UsageQueryText,
  now: number,
  names: Record<keyof UsageQueryText, string>,
): UsageQuery {
  const bound = (value: string | undefined, field: keyof UsageQueryText) => {
    if (value === undefined) return undefined;
    const time = parseTimeBound(value, now);
    if (time === undefined)
      throw new UsageQueryError(
        names[field],
        `must be a date (2024-05-01), an ISO 8601 time or a duration back from now (24h, 7d), got ${echoQuoted(value)}`,
      );
    return time;
  };
  const grouping = text.groupBy;
  if (grouping !== undefined && !(USAGE_GROUPINGS as readonly string[]).includes(grouping))
    throw new UsageQueryError(
      names.groupBy,
      `must be one of ${USAGE_GROUPINGS.join(', ')}, got ${echoQuoted(grouping)}`,
    );
  let limit = DEFAULT_ROW_LIMIT;
  if (text.limit !== undefined) {
    limit = /^[1-9][0-9]*$/.test(text.limit) ? Number(text.limit) : Number.NaN;
    if (!(limit <= MAX_ROW_LIMIT))
      throw new UsageQueryError(names.limit, `must be an integer from 1 to ${MAX_ROW_LIMIT}`);
  }
  const filter: UsageFilter = {};
  const since = bound(text.since, 'since');
  const until = bound(text.until, 'until');
  if (since !== undefined) filter.since = since;
  if (until !== undefined) filter.until = until;
  for (const field of ['token', 'account', 'requestId'] as const) {
    // No token id, account or request id holds one, and PostgreSQL refuses U+0000 in a filter.
    if (holdsControlCharacter(text[field] ?? ''))
      throw new UsageQueryError(names[field], 'must not hold a control character');
  }
  if (text.token !== undefined) filter.tokenId = text.token;
  if (text.account !== undefined) filter.account = text.account;
  if (text.requestId !== undefined) filter.requestId = text.requestId;
  return { filter, grouping: grouping as UsageGrouping | undefined, limit };
}

const EMPTY_TOTALS: UsageSummary = {
  key: 'total',
  requests: 0,
  succeeded: 0,
  failed: 0,
  imagesRequested: 0,
  imagesReceived: 0,
  imagesDelivered: 0,
  imagesBilled: 0,
  costMicros: 0,
};

export async function answerUsageQuery(
  reader: UsageReader,
  query: UsageQuery,
): Promise<UsageAnswer> {
  const [rows, groups, totals] = await Promise.all([
    query.grouping === undefined ? reader.list(query.filter, query.limit) : Promise.resolve([]),
    query.grouping === undefined
      ? Promise.resolve([])
      : reader.summarize(query.filter, query.grouping),
    reader.summarize(query.filter),
  ]);
  return { grouping: query.grouping, rows, groups, totals: totals[0] ?? EMPTY_TOTALS };
}
