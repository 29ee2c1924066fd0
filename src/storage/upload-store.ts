import type { BlobObject, BlobStore } from './blob-store.js';
import { uploadObjectKeyOf } from './object-keys.js';
import type { UploadKey } from './upload-policy.js';

export type UploadSave = { kind: 'stored'; size: number } | { kind: 'exists' };

/**
 * Uploaded files in the blob store, one object per key, in the `uploads-<hour>` folder of the hour
 * its certificate says it expires in, so the sweeper removes it with the images of that hour.
 */
export class UploadStore {
  constructor(private readonly blobs: BlobStore) {}

  /**
   * Stores the file unless its key already has one (OSS's `x-oss-forbid-overwrite: true`). Two
   * uploads racing for one key can both pass the check; the later simply wins, and both came
   * with the same certificate, so no other token's file can be replaced that way.
   */
  async save(upload: UploadKey, bytes: Buffer): Promise<UploadSave> {
    const objectKey = uploadObjectKeyOf(upload.objectName, upload.keepUntil);
    if ((await this.blobs.head(objectKey)) !== undefined) return { kind: 'exists' };
    const { size } = await this.blobs.put(objectKey, bytes);
    return { kind: 'stored', size };
  }

  open(upload: UploadKey): Promise<BlobObject | undefined> {
    return this.blobs.get(uploadObjectKeyOf(upload.objectName, upload.keepUntil));
  }
}
