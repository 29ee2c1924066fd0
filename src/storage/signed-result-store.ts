import type { Readable } from 'node:stream';
import type { BlobStore } from './blob-store.js';
import { expiryFolderOf, IMAGE_EXTENSION } from './object-keys.js';
import type { ResultStore } from './result-store.js';
import type { ImageUrlSigner } from './signed-url.js';

/** Stores each PNG as a new object in its expiry folder and answers the signed URL of its id. */
export class SignedResultStore implements ResultStore {
  constructor(
    private readonly blobs: BlobStore,
    private readonly urls: ImageUrlSigner,
  ) {}

  async save(png: Buffer | Readable): Promise<string> {
    const expiresAt = this.urls.expiresAtFromNow();
    const { id } = await this.blobs.putNew(expiryFolderOf(expiresAt), png, IMAGE_EXTENSION);
    return this.urls.urlOf({ id, expiresAt });
  }
}
