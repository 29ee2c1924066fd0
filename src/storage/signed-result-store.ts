import type { Readable } from 'node:stream';
import type { BlobStore } from './blob-store.js';
import { objectKeyOf } from './object-keys.js';
import type { ResultStore } from './result-store.js';
import type { ImageUrlSigner } from './signed-url.js';

/** Stores each PNG under a fresh unguessable id in its expiry folder and answers its signed URL. */
export class SignedResultStore implements ResultStore {
  constructor(
    private readonly blobs: BlobStore,
    private readonly urls: ImageUrlSigner,
  ) {}

  async save(png: Buffer | Readable): Promise<string> {
    const image = this.urls.issue();
    await this.blobs.putNew(objectKeyOf(image.id, image.expiresAt), png);
    return this.urls.urlOf(image);
  }
}
