import type { BlobStore } from './blob-store.js';
import { DiskBlobStore } from './disk-blob-store.js';
import type { ResultStore } from './result-store.js';
import { S3BlobStore, type S3BlobStoreOptions } from './s3-blob-store.js';
import { SignedResultStore } from './signed-result-store.js';
import { ImageUrlSigner } from './signed-url.js';
import { StoredInputReader } from './stored-input-reader.js';
import { Sweeper } from './sweeper.js';
import { UploadPolicySigner } from './upload-policy.js';
import { UploadStore } from './upload-store.js';
import type { StoredInputs } from '../domain/stored-inputs.js';

/** Structurally the same as `Config['storage']`, so the config can be passed as it is. */
export type StorageTarget =
  { kind: 'disk'; dataDir: string } | ({ kind: 's3' } & Omit<S3BlobStoreOptions, 'partSizeBytes'>);

export interface ResultStorageOptions {
  storage: StorageTarget;
  publicBaseUrl: string | (() => string);
  /** Other origins our image URLs may name (see ImageUrlSigner); none when absent. */
  isOtherOrigin?: (origin: string) => boolean;
  /** `deriveKeys(secret).imageUrlSigning`. */
  signingKey: Uint8Array;
  /** `deriveKeys(secret).uploadSigning`. */
  uploadSigningKey: Uint8Array;
  /** 0: this node does not sweep. Default 10 minutes. */
  sweepIntervalMs?: number;
  /** Milliseconds since the epoch; injectable for tests. */
  now?: () => number;
}

/** Everything the gateway needs for generated images, built from one configuration. */
export interface ResultStorage {
  /** What the generation pipeline saves PNGs through. */
  results: ResultStore;
  /** What the image routes read from. */
  blobs: BlobStore;
  /** What the image routes check URLs with. */
  urls: ImageUrlSigner;
  /** Upload certificates and the uploaded files (docs/api.md §12). */
  uploads: { policies: UploadPolicySigner; store: UploadStore };
  /** What the inputs stage reads uploads and our own result URLs through. */
  storedInputs: StoredInputs;
  /** Not started: call `sweeper.start(log)` once the server runs. */
  sweeper: Sweeper;
  /** Stops the sweeper and releases the backend's connections. */
  close(): Promise<void>;
}

export const DEFAULT_SWEEP_INTERVAL_MS = 10 * 60 * 1000;

export function createBlobStore(target: StorageTarget): BlobStore {
  if (target.kind === 'disk') return new DiskBlobStore(target.dataDir);
  return new S3BlobStore(target);
}

export function createResultStorage(options: ResultStorageOptions): ResultStorage {
  const blobs = createBlobStore(options.storage);
  const urls = new ImageUrlSigner({
    signingKey: options.signingKey,
    publicBaseUrl: options.publicBaseUrl,
    now: options.now,
    ...(options.isOtherOrigin === undefined ? {} : { isOtherOrigin: options.isOtherOrigin }),
  });
  const sweeper = new Sweeper(blobs, {
    intervalMs: options.sweepIntervalMs ?? DEFAULT_SWEEP_INTERVAL_MS,
    now: options.now,
  });
  const policies = new UploadPolicySigner({
    signingKey: options.uploadSigningKey,
    now: options.now,
  });
  const uploads = new UploadStore(blobs);
  return {
    results: new SignedResultStore(blobs, urls),
    blobs,
    urls,
    uploads: { policies, store: uploads },
    storedInputs: new StoredInputReader(blobs, urls, policies, uploads),
    sweeper,
    close: async () => {
      await sweeper.stop();
      await blobs.close();
    },
  };
}
