import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { UsageSummary } from '../../src/domain/usage-filter.js';
import { usageDocument } from '../../src/ledger/usage-document.js';
import { answerRecords, columnsOf, toCsv, totalsRecord } from '../../src/ledger/usage-format.js';
import type { UsageAnswer } from '../../src/ledger/usage-query.js';
import { JAN_1, usageRow } from '../helpers/usage-rows.js';

const TOTALS: UsageSummary = {
  key: 'total',
  requests: 3,
  succeeded: 2,
  failed: 1,
  imagesRequested: 4,
  imagesReceived: 3,
  imagesDelivered: 3,
  imagesBilled: 3,
  costMicros: 120_000,
};

function listing(rows: number): UsageAnswer {
  return {
    grouping: undefined,
    // Text that CSV must quote or guard, and JSON escape, in every slice.
    rows: Array.from({ length: rows }, (_, index) =>
      usageRow(1, {
        createdAt: JAN_1 + index,
        account: index % 3 === 0 ? '=cmd|"a,b"\r\n' : `acme-${index}`,
        errorCode: index % 7 === 0 ? 'UpstreamError' : undefined,
      }),
    ),
    groups: [],
    totals: TOTALS,
  };
}

/** The document as one call of each formatter, all at once: what the API sent before slicing. */
function allAtOnce(answer: UsageAnswer, format: 'json' | 'csv'): string {
  const records = answerRecords(answer);
  if (format === 'csv') return toCsv(records, columnsOf(answer));
  return JSON.stringify({
    group_by: answer.grouping ?? null,
    [answer.grouping === undefined ? 'rows' : 'groups']: records,
    totals: totalsRecord(answer.totals),
  });
}

const documentText = async (answer: UsageAnswer, format: 'json' | 'csv') =>
  Buffer.concat(await usageDocument(answer, format)).toString();

describe('usageDocument', () => {
  it('writes the same bytes as formatting every record at once, for listings of any length', async () => {
    for (const rows of [0, 1, 1999, 2000, 2001, 4500]) {
      const answer = listing(rows);
      for (const format of ['json', 'csv'] as const)
        assert.equal(
          await documentText(answer, format),
          allAtOnce(answer, format),
          `${rows} rows, ${format}`,
        );
    }
  });

  it('writes groups the same way', async () => {
    const grouped: UsageAnswer = {
      grouping: 'model',
      rows: [],
      groups: [
        { ...TOTALS, key: 'gen-2.7-image-pro' },
        { ...TOTALS, key: '-' },
      ],
      totals: TOTALS,
    };
    for (const format of ['json', 'csv'] as const)
      assert.equal(await documentText(grouped, format), allAtOnce(grouped, format), format);
    assert.deepEqual(JSON.parse(await documentText(grouped, 'json')).groups[1].model, '-');
  });

  it('lets the event loop turn while it formats a long listing', async () => {
    const answer = listing(10_000);
    let turns = 0;
    const ticker = setInterval(() => turns++, 0);
    try {
      await usageDocument(answer, 'json');
    } finally {
      clearInterval(ticker);
    }
    assert.ok(turns >= 2, `the event loop turned ${turns} times`);
  });
});
