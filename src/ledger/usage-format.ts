import type { UsageSummary } from '../domain/usage-filter.js';
import { formatMicros } from './prices.js';
import type { UsageAnswer } from './usage-query.js';
import type { UsageRow } from '../domain/usage-row.js';

type Cell = string | number | boolean | null;
export type UsageRecord = Record<string, Cell>;

/** A ledger row as the CLI and the admin API show it: snake_case, times in ISO 8601, cost exact. */
export function rowRecord(row: UsageRow): UsageRecord {
  return {
    time: new Date(row.createdAt).toISOString(),
    request_id: row.requestId,
    token_id: row.tokenId ?? null,
    account: row.account,
    model: row.model ?? null,
    mode: row.mode ?? null,
    channel: row.channel ?? null,
    status: row.status,
    error_code: row.errorCode ?? null,
    images_requested: row.imagesRequested,
    images_reported: row.imagesReported ?? null,
    images_received: row.imagesReceived,
    images_delivered: row.imagesDelivered,
    images_billed: row.imagesBilled,
    output_size: row.outputSize ?? null,
    cost: formatMicros(row.costMicros),
    gateway_ms: row.gatewayMs,
    upstream_ms: row.upstreamMs ?? null,
    queue_ms: row.queueMs ?? null,
    storage_ms: row.storageMs ?? null,
    replayed: row.replayed,
    workspace: row.workspace ?? null,
    front_door: row.frontDoor,
  };
}

export function summaryRecord(summary: UsageSummary, keyName: string): UsageRecord {
  return { [keyName]: summary.key, ...totalsRecord(summary) };
}

/** The totals of an answer, without a group key. */
export function totalsRecord(totals: UsageSummary): UsageRecord {
  return {
    requests: totals.requests,
    succeeded: totals.succeeded,
    failed: totals.failed,
    images_requested: totals.imagesRequested,
    images_received: totals.imagesReceived,
    images_delivered: totals.imagesDelivered,
    images_billed: totals.imagesBilled,
    cost: formatMicros(totals.costMicros),
  };
}

/** The records an answer lists: ledger rows, or one record per group. */
export function answerRecords(answer: UsageAnswer): UsageRecord[] {
  return answer.grouping === undefined
    ? answer.rows.map(rowRecord)
    : answer.groups.map((group) => summaryRecord(group, answer.grouping as string));
}

/** How a spreadsheet recognises a formula (OWASP, CSV injection). */
const FORMULA_START = /^[=+\-@\t\r]/;
/** What the summaries write for a missing group key; no spreadsheet reads it as a formula. */
const NO_KEY = '-';

/**
 * Text a spreadsheet could run as a formula gets a leading `'`: ledger text such as an external
 * token's `sub` is chosen by callers. Numbers are written from numbers and need no guard.
 */
function csvText(cell: Cell | undefined): string {
  if (cell === null || cell === undefined) return '';
  if (typeof cell !== 'string') return String(cell);
  return FORMULA_START.test(cell) && cell !== NO_KEY ? `'${cell}` : cell;
}

/**
 * RFC 4180: fields with a comma, quote or line break are quoted, quotes doubled; text that would
 * start a formula is guarded first.
 */
export function toCsv(records: readonly UsageRecord[], columns: readonly string[]): string {
  return `${columns.join(',')}\r\n${csvLines(records, columns)}`;
}

/** The lines of `records` under toCsv's header, each ending in CRLF. */
export function csvLines(records: readonly UsageRecord[], columns: readonly string[]): string {
  const field = (cell: Cell | undefined) => {
    const text = csvText(cell);
    return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
  };
  return records
    .map((record) => `${columns.map((column) => field(record[column])).join(',')}\r\n`)
    .join('');
}

/** C0 controls, DEL and C1 controls (ESC and CSI among them): what a terminal acts on. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/g;

/** Control characters as visible `\x1b` escapes, so that ledger text cannot drive the terminal. */
function terminalText(text: string): string {
  return text.replace(
    CONTROL_CHARACTER,
    (character) => `\\x${character.charCodeAt(0).toString(16).padStart(2, '0')}`,
  );
}

/** Columns padded to their widest cell, for a terminal. */
export function toTable(records: readonly UsageRecord[], columns: readonly string[]): string {
  const rows = [
    columns.map((column) => column.toUpperCase()),
    ...records.map((record) =>
      columns.map((column) => terminalText(String(record[column] ?? '-'))),
    ),
  ];
  const widths = columns.map((_, index) =>
    Math.max(...rows.map((row) => (row[index] as string).length)),
  );
  return rows
    .map((row) =>
      row
        .map((cell, index) => cell.padEnd(widths[index] as number))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')
    .concat('\n');
}

const ROW_COLUMNS = [
  'time',
  'request_id',
  'token_id',
  'account',
  'model',
  'mode',
  'channel',
  'status',
  'error_code',
  'images_requested',
  'images_reported',
  'images_received',
  'images_delivered',
  'images_billed',
  'output_size',
  'cost',
  'gateway_ms',
  'upstream_ms',
  'queue_ms',
  'storage_ms',
  'replayed',
  'workspace',
  'front_door',
];
const SUMMARY_COLUMNS = [
  'requests',
  'succeeded',
  'failed',
  'images_requested',
  'images_received',
  'images_delivered',
  'images_billed',
  'cost',
];

/** The columns of the records answerRecords gives, in order. */
export function columnsOf(answer: UsageAnswer): string[] {
  return answer.grouping === undefined ? ROW_COLUMNS : [answer.grouping, ...SUMMARY_COLUMNS];
}
