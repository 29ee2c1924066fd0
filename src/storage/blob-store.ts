import type { Readable } from 'node:stream';

/**
 * A key is `<folder>/<name>`: exactly two segments of letters, digits, `.`, `_` and `-`, neither
 * starting with a dot. Folders are the unit the sweeper deletes (see object-keys.ts); the strict
 * shape keeps a key from ever naming a path outside the store or a store's temporary file.
 */
export type BlobKey = `${string}/${string}`;

const KEY_PATTERN = /^[A-Za-z0-9_-][A-Za-z0-9._-]*\/[A-Za-z0-9_-][A-Za-z0-9._-]*$/;
const FOLDER_PATTERN = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/;

export function isBlobKey(key: string): key is BlobKey {
  return key.length <= 512 && KEY_PATTERN.test(key);
}

export function assertBlobKey(key: string): asserts key is BlobKey {
  if (!isBlobKey(key)) throw new TypeError(`not a valid blob key: ${JSON.stringify(key)}`);
}

export function assertFolder(folder: string): void {
  if (folder.length > 256 || !FOLDER_PATTERN.test(folder))
    throw new TypeError(`not a valid blob folder: ${JSON.stringify(folder)}`);
}

export interface BlobHead {
  /** Size in bytes. */
  size: number;
}

export interface BlobObject extends BlobHead {
  /** The bytes, streamed from the backend. The caller must consume or destroy it. */
  stream: Readable;
}

/**
 * Where generated images live: local disk or S3-compatible object storage. Writes are
 * all-or-nothing: a reader sees the whole object or none.
 */
export interface BlobStore {
  /** Stores the bytes under `key`, replacing any object there. Streams are not buffered whole. */
  put(key: BlobKey, body: Buffer | Readable): Promise<BlobHead>;
  /**
   * Stores the bytes under a fresh, unguessable key that no reader can know before this resolves,
   * so the write needs no all-or-nothing replace. What a failed or interrupted write leaves under
   * the key is never read, and is swept with its folder.
   */
  putNew(key: BlobKey, body: Buffer | Readable): Promise<BlobHead>;
  /** The object as a stream, or undefined when there is none. */
  get(key: BlobKey): Promise<BlobObject | undefined>;
  /** The object's size, or undefined when there is none. */
  head(key: BlobKey): Promise<BlobHead | undefined>;
  /** Deletes the object; deleting a missing object is not an error. */
  delete(key: BlobKey): Promise<void>;
  /** The folders that currently hold objects (or once did and are not yet removed). */
  listFolders(): Promise<string[]>;
  /** Deletes every object in `folder` and the folder itself; returns how many objects went. */
  deleteFolder(folder: string): Promise<number>;
  /** Resolves when the store can be written to now (for /readyz); rejects otherwise. */
  checkReady(): Promise<void>;
  /** Releases connections or handles. The store is not used afterwards. */
  close(): Promise<void>;
}
