import type { StoredInputRead, StoredInputs } from '../domain/stored-inputs.js';
import { readLimited } from '../support/read-limited.js';
import type { BlobObject, BlobStore } from './blob-store.js';
import { objectKeyOf } from './object-keys.js';
import type { UploadPolicySigner } from './upload-policy.js';
import type { UploadStore } from './upload-store.js';
import type { ImageUrlSigner } from './signed-url.js';

async function readBlob(blob: BlobObject, maxBytes: number): Promise<StoredInputRead> {
  if (blob.size > maxBytes) {
    blob.stream.destroy();
    return { kind: 'too-large', size: blob.size };
  }
  const read = await readLimited(blob.stream, maxBytes);
  return read.kind === 'complete'
    ? { kind: 'found', bytes: read.bytes }
    : { kind: 'too-large', size: blob.size };
}

/**
 * Reads inputs that live in our own storage: previous results behind our signed URLs (chained
 * edits, with no HTTP request to ourselves) and uploads (`oss://` keys of the caller's token).
 */
export class StoredInputReader implements StoredInputs {
  constructor(
    private readonly blobs: BlobStore,
    private readonly urls: ImageUrlSigner,
    private readonly policies: UploadPolicySigner,
    private readonly uploads: UploadStore,
  ) {}

  async readResultUrl(url: string, maxBytes: number): Promise<StoredInputRead | undefined> {
    const checked = this.urls.checkUrl(url);
    if (checked === undefined) return undefined;
    if (!checked.ok) return { kind: 'refused', problem: checked.message };
    const { image } = checked;
    const blob = await this.blobs.get(objectKeyOf(image.id, image.expiresAt));
    if (blob === undefined) return { kind: 'refused', problem: 'image no longer exists' };
    return readBlob(blob, maxBytes);
  }

  async readUpload(key: string, owner: string, maxBytes: number): Promise<StoredInputRead> {
    const checked = this.policies.readKey(key, owner);
    if (!checked.ok) return { kind: 'refused', problem: checked.problem };
    const { upload } = checked;
    if (upload.keepUntil <= this.policies.nowSeconds())
      return {
        kind: 'refused',
        problem: `the upload expired at ${new Date(upload.keepUntil * 1000).toISOString()}`,
      };
    const blob = await this.uploads.open(upload);
    if (blob === undefined)
      return { kind: 'refused', problem: 'nothing was uploaded under this key' };
    return readBlob(blob, maxBytes);
  }
}
