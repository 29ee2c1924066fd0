import { silentLog } from '../../src/support/log.js';
import assert from 'node:assert/strict';
import { describe, it, type MockTimers, type TestContext } from 'node:test';
import { MODEL_A, MODEL_B } from '../../src/domain/models.js';
import { BatchingLedger } from '../../src/ledger/batching-ledger.js';
import type { UsageRow } from '../../src/domain/usage-row.js';
import type { Database } from '../../src/store/database/database.js';
import { SqlUsageStore } from '../../src/store/usage-store.js';
import { BACKENDS, openNodes } from '../helpers/database-backends.js';
import { DAY, JAN_1, usageRow } from '../helpers/usage-rows.js';

/** A row of two billed images, as the tests below expect. */
const ledgerRow = (overrides: Partial<UsageRow> = {}) =>
  usageRow(2, { costMicros: 80_000, gatewayMs: 120, upstreamMs: 100, ...overrides });

class RecordingSink {
  batches: UsageRow[][] = [];
  failuresLeft = 0;
  async insert(rows: readonly UsageRow[]) {
    if (this.failuresLeft > 0) {
      this.failuresLeft--;
      throw new Error('database down');
    }
    this.batches.push([...rows]);
  }
}

const quietLog = silentLog;

/** Lets every pending promise callback run (setImmediate is left real by the mock timers). */
function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** The ledger's timers on a clock the test moves: intervals and close()'s retry pauses. */
function mockTimers(t: TestContext): MockTimers {
  t.mock.timers.enable({ apis: ['setInterval', 'setTimeout'] });
  return t.mock.timers;
}

/** close(), moving the mocked clock past each retry pause it takes while the sink fails. */
async function closeThroughRetries(ledger: BatchingLedger, timers: MockTimers): Promise<void> {
  let closed = false;
  const closing = ledger.close().finally(() => (closed = true));
  await settle();
  for (let pauses = 0; !closed; pauses++) {
    if (pauses === 10) assert.fail('close() still pausing after 10 retries');
    timers.runAll();
    await settle();
  }
  await closing;
}

describe('the batching ledger', () => {
  it('writes in batches of the configured size, and what is left on flush', async () => {
    const sink = new RecordingSink();
    const ledger = new BatchingLedger(
      sink,
      { batchSize: 3, flushIntervalMs: 60_000, maxBuffered: 100 },
      quietLog,
    );
    for (let i = 0; i < 7; i++) ledger.record(ledgerRow());
    await ledger.flush();
    assert.deepEqual(
      sink.batches.map((batch) => batch.length),
      [3, 3, 1],
    );
    await ledger.close();
  });

  it('keeps rows through failed writes and writes them all on close', async (t) => {
    const timers = mockTimers(t);
    const sink = new RecordingSink();
    const errors: object[] = [];
    const ledger = new BatchingLedger(
      sink,
      { batchSize: 100, flushIntervalMs: 60_000, maxBuffered: 100 },
      { ...quietLog, error: (details) => errors.push(details) },
    );
    const rows = Array.from({ length: 5 }, () => ledgerRow());
    for (const row of rows) ledger.record(row);
    sink.failuresLeft = 2;
    await assert.rejects(ledger.flush(), /database down/);
    assert.equal(ledger.pending, 5);
    await closeThroughRetries(ledger, timers);
    assert.deepEqual(sink.batches.flat(), rows);
    assert.deepEqual(errors, []);
  });

  it('logs, rather than silently drops, rows it cannot write by shutdown', async (t) => {
    const timers = mockTimers(t);
    const sink = new RecordingSink();
    const errors: { rows?: UsageRow[] }[] = [];
    const ledger = new BatchingLedger(
      sink,
      { batchSize: 100, flushIntervalMs: 60_000, maxBuffered: 100 },
      { ...quietLog, error: (details) => errors.push(details) },
    );
    const row = ledgerRow();
    ledger.record(row);
    sink.failuresLeft = 10;
    await closeThroughRetries(ledger, timers);
    assert.deepEqual(errors[0]?.rows, [row]);
  });

  it('writes on its interval without being asked', async (t) => {
    const timers = mockTimers(t);
    const sink = new RecordingSink();
    const ledger = new BatchingLedger(
      sink,
      { batchSize: 100, flushIntervalMs: 20, maxBuffered: 100 },
      quietLog,
    );
    ledger.record(ledgerRow());
    timers.tick(19);
    await settle();
    assert.equal(sink.batches.flat().length, 0, 'not before the interval');
    timers.tick(1);
    await settle();
    assert.equal(sink.batches.flat().length, 1);
    await ledger.close();
  });
});

for (const [backend, targetFor] of BACKENDS) {
  describe(`the usage ledger on ${backend}`, () => {
    it('filters by time, token and account, and adds up by day, model and token', async (t) => {
      const nodes = await openNodes(t, targetFor, 1);
      if (nodes === undefined) return;
      const store = new SqlUsageStore(nodes[0] as Database);
      await store.insert([
        ledgerRow({ createdAt: JAN_1 + 1000 }),
        ledgerRow({
          createdAt: JAN_1 + 2000,
          model: MODEL_B,
          imagesReceived: 1,
          imagesDelivered: 1,
          imagesBilled: 1,
          costMicros: 25_000,
        }),
        ledgerRow({
          createdAt: JAN_1 + DAY + 5,
          tokenId: 'tok_b',
          account: 'beta',
          status: 429,
          errorCode: 'Throttling.RateQuota',
          imagesReceived: 0,
          imagesDelivered: 0,
          imagesBilled: 0,
          costMicros: 0,
          outputSize: undefined,
          upstreamMs: undefined,
        }),
        ledgerRow({
          createdAt: JAN_1 + 2 * DAY,
          tokenId: undefined,
          account: 'external',
          costMicros: 1,
        }),
      ]);
      const byDay = await store.summarize({}, 'day');
      assert.deepEqual(
        byDay.map((group) => [
          group.key,
          group.requests,
          group.succeeded,
          group.failed,
          group.imagesBilled,
          group.costMicros,
        ]),
        [
          ['2025-01-01', 2, 2, 0, 3, 105_000],
          ['2025-01-02', 1, 0, 1, 0, 0],
          ['2025-01-03', 1, 1, 0, 2, 1],
        ],
      );
      assert.deepEqual(
        (await store.summarize({}, 'model')).map((group) => [group.key, group.requests]),
        [
          [MODEL_A, 3],
          [MODEL_B, 1],
        ],
      );
      assert.deepEqual(
        (await store.summarize({}, 'token')).map((group) => [group.key, group.imagesRequested]),
        [
          ['-', 2],
          ['tok_a', 4],
          ['tok_b', 2],
        ],
      );
      const [totals] = await store.summarize({ since: JAN_1 + DAY, until: JAN_1 + 3 * DAY });
      assert.equal(totals?.requests, 2);
      assert.equal((await store.summarize({ account: 'nobody' }))[0]?.requests, 0);
      const listed = await store.list({ tokenId: 'tok_b' }, 10);
      assert.equal(listed.length, 1);
      assert.equal(listed[0]?.errorCode, 'Throttling.RateQuota');
      assert.equal(listed[0]?.upstreamMs, undefined);
      assert.equal((await store.list({}, 2)).length, 2);
    });
  });
}
