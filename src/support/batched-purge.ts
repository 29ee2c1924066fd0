import { setImmediate as nextTurn } from 'node:timers/promises';

/**
 * Rows one purge statement deletes at most. A delete runs on SQLite's connection on the event
 * loop, at some 20-50 µs a row with its indexes: a few milliseconds a batch, where a minute's
 * expired keys in one statement held every request for most of a second.
 */
export const PURGE_BATCH_ROWS = 200;

/**
 * Deletes by batches of at most `batchSize` rows, giving the event loop a turn between two of
 * them, until a batch comes back short; returns how many rows went. `deleteBatch` deletes at most
 * `limit` rows and says how many it did.
 */
export async function purgeInBatches(
  deleteBatch: (limit: number) => Promise<number>,
  batchSize = PURGE_BATCH_ROWS,
): Promise<number> {
  if (!Number.isInteger(batchSize) || batchSize < 1)
    throw new RangeError(`a purge's batch size must be a whole number from 1, not ${batchSize}`);
  let total = 0;
  for (;;) {
    const deleted = await deleteBatch(batchSize);
    total += deleted;
    if (deleted < batchSize) return total;
    await nextTurn();
  }
}
