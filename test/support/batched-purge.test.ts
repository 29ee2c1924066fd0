import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { purgeInBatches } from '../../src/support/batched-purge.js';

/** A table of `rows` rows that deletes as asked, recording each limit it was given. */
function table(rows: number) {
  let left = rows;
  const limits: number[] = [];
  return {
    limits,
    deleteBatch: async (limit: number) => {
      limits.push(limit);
      const deleted = Math.min(left, limit);
      left -= deleted;
      return deleted;
    },
  };
}

describe('purgeInBatches', () => {
  it('deletes by batches until one comes back short, and counts every row', async () => {
    const rows = table(450);
    assert.equal(await purgeInBatches(rows.deleteBatch, 100), 450);
    assert.deepEqual(rows.limits, [100, 100, 100, 100, 100]);
  });

  it('asks once more after a full last batch, and stops at an empty one', async () => {
    const rows = table(200);
    assert.equal(await purgeInBatches(rows.deleteBatch, 100), 200);
    assert.equal(rows.limits.length, 3);
  });

  it('asks once when nothing has expired', async () => {
    const rows = table(0);
    assert.equal(await purgeInBatches(rows.deleteBatch, 100), 0);
    assert.equal(rows.limits.length, 1);
  });

  it('gives the event loop a turn between two batches, not only at the end', async () => {
    const rows = table(1000);
    let batchesWhenTheLoopTurned: number | undefined;
    setImmediate(() => (batchesWhenTheLoopTurned = rows.limits.length));
    await purgeInBatches(rows.deleteBatch, 100);
    assert.equal(batchesWhenTheLoopTurned, 1);
  });

  it('passes a failing batch on, with what it deleted before left deleted', async () => {
    let calls = 0;
    await assert.rejects(
      purgeInBatches(async (limit) => {
        calls++;
        if (calls === 3) throw new Error('database gone');
        return limit;
      }, 10),
      /database gone/,
    );
    assert.equal(calls, 3);
  });

  it('refuses a batch size that could never end the purge', async () => {
    for (const size of [0, -1, 0.5, Number.NaN])
      await assert.rejects(
        purgeInBatches(async () => 0, size),
        RangeError,
        String(size),
      );
  });
});
