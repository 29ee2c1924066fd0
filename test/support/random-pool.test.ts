import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { copyRandomBytes, randomBase64Url } from '../../src/support/random-pool.js';

describe('the random pool', () => {
  it('hands out base64url text of the asked number of bytes, never the same twice', () => {
    // 18 bytes: 24 characters, and past several refills of the 4 KiB pool.
    const ids = Array.from({ length: 2000 }, () => randomBase64Url(18));
    assert.equal(new Set(ids).size, ids.length);
    for (const id of ids) assert.match(id, /^[A-Za-z0-9_-]{24}$/);
    const bytes = Buffer.concat(ids.map((id) => Buffer.from(id, 'base64url')));
    // 36,000 random bytes: every value turns up, none far more often than 1/256 of the time.
    const counts = new Array<number>(256).fill(0);
    for (const byte of bytes) counts[byte] = (counts[byte] ?? 0) + 1;
    assert.ok(Math.min(...counts) > 0);
    assert.ok(Math.max(...counts) < (bytes.length / 256) * 1.6);
  });

  it('copies fresh bytes into a buffer, leaving the rest of it alone', () => {
    const target = Buffer.alloc(16, 0xaa);
    copyRandomBytes(target, 6, 10);
    assert.deepEqual(target.subarray(0, 6), Buffer.alloc(6, 0xaa));
    const again = Buffer.alloc(16, 0xaa);
    copyRandomBytes(again, 6, 10);
    assert.notDeepEqual(again.subarray(6), target.subarray(6));
  });
});
