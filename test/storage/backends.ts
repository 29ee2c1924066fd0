import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { BlobStore } from '../../src/storage/blob-store.js';
import type { StorageTarget } from '../../src/storage/create-result-storage.js';
import { DiskBlobStore } from '../../src/storage/disk-blob-store.js';
import { S3BlobStore } from '../../src/storage/s3-blob-store.js';
import { type FakeS3Server, startFakeS3 } from '../fixtures/s3-server.js';

export const TEST_BUCKET = 'imagegate-test';
export const TEST_PREFIX = 'images/';

/** One backend, started for real: a temporary directory, or the fake S3 server on loopback. */
export interface OpenedBackend {
  target: StorageTarget;
  store: BlobStore;
  /** Set for S3 only. */
  s3: FakeS3Server | undefined;
  /** Set for disk only. */
  dataDir: string | undefined;
  close(): Promise<void>;
}

export interface Backend {
  name: 'disk' | 's3';
  open(): Promise<OpenedBackend>;
}

async function openDisk(): Promise<OpenedBackend> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'imagegate-storage-'));
  const target: StorageTarget = { kind: 'disk', dataDir };
  const store = new DiskBlobStore(dataDir);
  return {
    target,
    store,
    s3: undefined,
    dataDir,
    close: async () => {
      await store.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

export async function openS3(options: { prefix?: string; partSizeBytes?: number } = {}) {
  const s3 = await startFakeS3({ buckets: [TEST_BUCKET] });
  const target = {
    kind: 's3' as const,
    bucket: TEST_BUCKET,
    endpoint: s3.endpoint,
    region: 'us-east-1',
    accessKeyId: 'test-access-key',
    secretAccessKey: 'test-secret-key',
    forcePathStyle: true,
    prefix: options.prefix ?? TEST_PREFIX,
  };
  const store = new S3BlobStore({ ...target, partSizeBytes: options.partSizeBytes });
  return {
    target,
    store,
    s3,
    dataDir: undefined,
    close: async () => {
      await store.close();
      await s3.close();
    },
  } satisfies OpenedBackend;
}

export const BACKENDS: readonly Backend[] = [
  { name: 'disk', open: openDisk },
  { name: 's3', open: () => openS3() },
];
