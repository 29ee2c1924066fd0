import { setImmediate as nextTurn } from 'node:timers/promises';
import {
  columnsOf,
  csvLines,
  rowRecord,
  summaryRecord,
  totalsRecord,
  type UsageRecord,
} from './usage-format.js';
import type { UsageAnswer } from './usage-query.js';

/**
 * Records formatted between two turns of the event loop: a few milliseconds of work. 2,000 a turn
 * doubled the p99 of requests served beside a listing of 100,000 rows
 * (docs/decisions/0006-long-reads-off-the-event-loop.md).
 */
const RECORDS_PER_TURN = 500;

/**
 * The answer as the admin API sends it, as the bytes of `{group_by, rows | groups, totals}` in
 * JSON or of the records in CSV, in pieces to be sent one after the other. A listing of 100,000
 * rows is about 40 MB: formatted, joined and encoded at once it held the event loop for about a
 * second, so each slice of records is formatted and encoded on a turn of its own, and the
 * pieces are never joined.
 */
export async function usageDocument(
  answer: UsageAnswer,
  format: 'json' | 'csv',
): Promise<Buffer[]> {
  const columns = columnsOf(answer);
  const listed = answer.grouping === undefined ? 'rows' : 'groups';
  const pieces = [
    Buffer.from(
      format === 'csv'
        ? `${columns.join(',')}\r\n`
        : `{"group_by":${JSON.stringify(answer.grouping ?? null)},"${listed}":[`,
    ),
  ];
  let first = true;
  for await (const records of recordSlices(answer)) {
    if (format === 'csv') pieces.push(Buffer.from(csvLines(records, columns)));
    else if (records.length > 0) {
      const json = JSON.stringify(records);
      pieces.push(Buffer.from(first ? json.slice(1, -1) : `,${json.slice(1, -1)}`));
      first = false;
    }
  }
  if (format === 'json')
    pieces.push(Buffer.from(`],"totals":${JSON.stringify(totalsRecord(answer.totals))}}`));
  return pieces;
}

async function* recordSlices(answer: UsageAnswer): AsyncGenerator<UsageRecord[]> {
  const { grouping } = answer;
  if (grouping !== undefined) {
    yield answer.groups.map((group) => summaryRecord(group, grouping));
    return;
  }
  for (let start = 0; start < answer.rows.length; start += RECORDS_PER_TURN) {
    if (start > 0) await nextTurn();
    yield answer.rows.slice(start, start + RECORDS_PER_TURN).map(rowRecord);
  }
}
