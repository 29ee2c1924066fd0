import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NotReadyError, readinessOf } from '../../src/health/readiness.js';
import { S3BlobStore } from '../../src/storage/s3-blob-store.js';
import { BACKENDS, openS3 } from './backends.js';

describe('storage readiness', () => {
  for (const backend of BACKENDS) {
    it(`${backend.name}: a usable store is ready`, async (t) => {
      const opened = await backend.open();
      t.after(() => opened.close());
      await opened.store.checkReady();
    });
  }

  it('s3: a missing bucket is not ready', async (t) => {
    const opened = await openS3();
    t.after(() => opened.close());
    const missing = new S3BlobStore({ ...opened.target, bucket: 'no-such-bucket' });
    t.after(() => missing.close());
    await assert.rejects(missing.checkReady());
  });

  it('readinessOf names every failing dependency and passes when all are up', async () => {
    const up = async () => undefined;
    const down = async () => {
      throw new Error('connection refused');
    };
    await readinessOf({ database: up, storage: up })();
    await assert.rejects(
      readinessOf({ database: down, storage: up, cache: down })(),
      (error: unknown) => {
        assert.ok(error instanceof NotReadyError);
        assert.deepEqual(error.failing, ['database', 'cache']);
        return true;
      },
    );
  });

  it('readinessOf counts a dependency that does not answer in time as not ready', async () => {
    const frozen = () => new Promise<void>(() => undefined);
    const started = Date.now();
    await assert.rejects(
      readinessOf({ database: frozen, storage: async () => undefined }, 50)(),
      (error: unknown) => {
        assert.ok(error instanceof NotReadyError);
        assert.deepEqual(error.failing, ['database']);
        return true;
      },
    );
    assert.ok(Date.now() - started < 1000, 'answered without waiting for the frozen check');
  });
});
