import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { timeOrderedUuid } from '../../src/support/time-ordered-id.js';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('timeOrderedUuid', () => {
  it('is a version 7 UUID whose first 48 bits are the time in milliseconds', () => {
    const now = Date.UTC(2030, 5, 4, 9, 30);
    const id = timeOrderedUuid(now);
    assert.match(id, UUID_V7);
    assert.equal(parseInt(id.replace(/-/g, '').slice(0, 12), 16), now);
  });

  it('sorts by time across milliseconds, as text', () => {
    const ids = [1, 2, 3, 1000, 1_000_000, 2 ** 40].map((offset) =>
      timeOrderedUuid(1_700_000_000_000 + offset),
    );
    assert.deepEqual([...ids].sort(), ids);
  });

  it('never repeats, also past the random pool it draws from', () => {
    const ids = new Set(Array.from({ length: 5000 }, () => timeOrderedUuid(1_700_000_000_000)));
    assert.equal(ids.size, 5000);
    for (const id of ids) assert.match(id, UUID_V7);
  });
});
