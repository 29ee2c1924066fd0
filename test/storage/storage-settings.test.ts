import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config/load-config.js';
import type { StorageTarget } from '../../src/storage/create-result-storage.js';

const BASE = { IMAGEGATE_DATA_DIR: '/tmp/imagegate-settings-test' };

function problemsOf(env: Record<string, string>): readonly string[] {
  try {
    loadConfig({ ...BASE, ...env });
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

describe('storage settings', () => {
  it('default to disk under the data dir and a 10-minute sweep', () => {
    const config = loadConfig(BASE);
    assert.deepEqual(config.storage, {
      kind: 'disk',
      dataDir: path.resolve(BASE.IMAGEGATE_DATA_DIR),
    });
    assert.equal(config.sweepIntervalMs, 600_000);
  });

  it('read every S3 setting, adding the trailing slash a prefix needs', () => {
    const config = loadConfig({
      ...BASE,
      IMAGEGATE_STORAGE: 's3',
      IMAGEGATE_S3_BUCKET: 'images',
      IMAGEGATE_S3_ENDPOINT: 'http://minio.internal:9000',
      IMAGEGATE_S3_REGION: 'eu-central-1',
      IMAGEGATE_S3_ACCESS_KEY_ID: 'AKIAEXAMPLE',
      IMAGEGATE_S3_SECRET_ACCESS_KEY: 'secret/key+value',
      IMAGEGATE_S3_FORCE_PATH_STYLE: 'true',
      IMAGEGATE_S3_PREFIX: 'gateway/prod',
      IMAGEGATE_SWEEP_INTERVAL_MS: '0',
    });
    assert.deepEqual(config.storage, {
      kind: 's3',
      bucket: 'images',
      endpoint: 'http://minio.internal:9000',
      region: 'eu-central-1',
      accessKeyId: 'AKIAEXAMPLE',
      secretAccessKey: 'secret/key+value',
      forcePathStyle: true,
      prefix: 'gateway/prod/',
    });
    assert.equal(config.sweepIntervalMs, 0);
    // The config's storage section is passed to createResultStorage as it is.
    const target: StorageTarget = config.storage;
    assert.equal(target.kind, 's3');
  });

  it('default S3 to us-east-1, virtual-hosted style, no prefix and the SDK credential chain', () => {
    const config = loadConfig({ ...BASE, IMAGEGATE_STORAGE: 's3', IMAGEGATE_S3_BUCKET: 'b-1' });
    assert.deepEqual(config.storage, {
      kind: 's3',
      bucket: 'b-1',
      endpoint: undefined,
      region: 'us-east-1',
      accessKeyId: undefined,
      secretAccessKey: undefined,
      forcePathStyle: false,
      prefix: '',
    });
  });

  it('report s3 without a bucket together with the other problems', () => {
    const problems = problemsOf({ IMAGEGATE_STORAGE: 's3', PORT: 'eighty' });
    assert.ok(
      problems.some((p) => /^PORT /.test(p)),
      problems.join('\n'),
    );
    assert.ok(
      problems.some((p) => /IMAGEGATE_S3_BUCKET .*must be set/.test(p)),
      problems.join('\n'),
    );
  });

  it('report half a key pair, a bad storage kind, endpoint, prefix or interval', () => {
    const problems = problemsOf({
      IMAGEGATE_STORAGE: 's3',
      IMAGEGATE_S3_BUCKET: 'b-1',
      IMAGEGATE_S3_ACCESS_KEY_ID: 'AKIAEXAMPLE',
      IMAGEGATE_S3_ENDPOINT: 'ftp://example.com',
      IMAGEGATE_S3_PREFIX: '../up',
      IMAGEGATE_SWEEP_INTERVAL_MS: '-1',
    });
    for (const expected of [
      /set together/,
      /^IMAGEGATE_S3_ENDPOINT /,
      /^IMAGEGATE_S3_PREFIX /,
      /^IMAGEGATE_SWEEP_INTERVAL_MS /,
    ])
      assert.ok(
        problems.some((p) => expected.test(p)),
        `${expected} in\n${problems.join('\n')}`,
      );
    assert.ok(problemsOf({ IMAGEGATE_STORAGE: 'gcs' }).some((p) => /^IMAGEGATE_STORAGE /.test(p)));
  });
});
