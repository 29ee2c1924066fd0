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

/** `.png` and the like: what a store appends to the id it chooses in `putNew`. */
const EXTENSION_PATTERN = /^\.[A-Za-z0-9]{1,8}$/;

export function assertExtension(extension: string): void {
  if (!EXTENSION_PATTERN.test(extension))
    throw new TypeError(`not a valid extension: ${JSON.stringify(extension)}`);
}

export function assertFolder(folder: string): void {
  if (folder.length > 256 || !FOLDER_PATTERN.test(folder))
    throw new TypeError(`not a valid blob folder: ${JSON.stringify(folder)}`);
}

export interface BlobHead {
  /** Size in bytes. */
  size: number;
}

export interface NewBlob extends BlobHead {
  /** The store's name for the object, without the extension. */
  id: string;
  key: BlobKey;
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
   * Stores the bytes as a new object in `folder`, under a name `<id><extension>` that the store
   * chooses and no reader can know before this resolves, so the write needs no all-or-nothing
   * replace. What a failed or interrupted write leaves is never read, and is swept with its
   * folder. The id is made of letters, digits, `_` and `-`, 16 to 64 of them.
   */
  putNew(folder: string, body: Buffer | Readable, extension: string): Promise<NewBlob>;
  /** The object as a stream, or undefined when there is none. */
  get(key: BlobKey): Promise<BlobObject | undefined>;
  /** The object's size, or undefined when there is none. */
  head(key: BlobKey): Promise<BlobHead | undefined>;
  /**
   * Deletes the object; deleting a missing object is not an error. A store may keep objects made
   * by `putNew` together in one file, deleted only with their folder; it refuses to delete one.
   */
  delete(key: BlobKey): Promise<void>;
  /** The folders that currently hold objects (or once did and are not yet removed). */
  listFolders(): Promise<string[]>;
  /**
   * Deletes every object in `folder` and the folder itself; returns how many objects went, where
   * a file that holds many objects (a disk segment) counts as one.
   */
  deleteFolder(folder: string): Promise<number>;
  /** Resolves when the store can be written to now (for /readyz); rejects otherwise. */
  checkReady(): Promise<void>;
  /** Releases connections or handles. The store is not used afterwards. */
  close(): Promise<void>;
}
