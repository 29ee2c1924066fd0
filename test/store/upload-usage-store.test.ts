import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SqlUploadUsageStore, type UploadBound } from '../../src/store/upload-usage-store.js';
import { BACKENDS, openNodes } from '../helpers/database-backends.js';

const NOW = 1_800_000_000_000;

function bound(scope: string, maxBytes: number, maxFiles: number, expiresAt = NOW): UploadBound {
  return { scope, maxBytes, maxFiles, expiresAt };
}

for (const [backend, targetFor] of BACKENDS) {
  describe(`upload usage (${backend})`, () => {
    it('counts a file against every bound or none, gives it back, and forgets ended bounds', async (t) => {
      const nodes = await openNodes(t, targetFor, 1);
      if (nodes === undefined) return;
      const [database] = nodes;
      const store = new SqlUploadUsageStore(database!.db);
      const certificate = bound('certificate:a', 1000, 5, NOW - 1);
      const token = bound('token:t:0', 250, 10, NOW + 1);

      assert.equal(await store.charge([certificate, token], 100), undefined);
      assert.equal(await store.charge([certificate, token], 100), undefined);
      // 300 bytes would pass the token's 250: neither row moves.
      assert.equal(await store.charge([certificate, token], 100), token);
      assert.deepEqual(await store.usage('certificate:a'), { bytes: 200, files: 2 });
      assert.deepEqual(await store.usage('token:t:0'), { bytes: 200, files: 2 });
      // A file larger than a bound is refused without a statement.
      assert.equal(await store.charge([token], 251), token);

      await store.refund(['certificate:a', 'token:t:0'], 100);
      assert.deepEqual(await store.usage('token:t:0'), { bytes: 100, files: 1 });

      assert.equal(await store.deleteExpired(NOW, 10), 1);
      assert.equal(await store.usage('certificate:a'), undefined);
      assert.deepEqual(await store.usage('token:t:0'), { bytes: 100, files: 1 });
    });
  });
}
