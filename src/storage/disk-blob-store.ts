import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { access, constants, open, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  assertBlobKey,
  assertExtension,
  assertFolder,
  type BlobHead,
  type BlobKey,
  type BlobObject,
  type BlobStore,
  type NewBlob,
} from './blob-store.js';
import {
  isSegmentFileName,
  SegmentAppender,
  type SegmentRecord,
  segmentFileName,
} from './segment-appender.js';
import { parseSegmentRecordId, segmentRecordId } from './segment-record-id.js';
import { newImageId } from './object-keys.js';
import { makeDirectoryDurably, syncDirectory } from '../support/durable-directories.js';

/** Far more than the folders of a day's images; past it the memory starts afresh. */
const REMEMBERED_FOLDERS = 64;

function isMissing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | null)?.code === 'ENOENT';
}

/** Buffers up to this size go into a segment; larger images, and streams, get a file each. */
const SEGMENT_RECORD_LIMIT_BYTES = 4 * 1024 * 1024;
/** Past this size a segment takes no more records and the next opens a new one. */
const MAX_SEGMENT_BYTES = 1024 * 1024 * 1024;
/** How often a segment's path is checked while it is written to (a folder removed by hand). */
const SEGMENT_RECHECK_MS = 1000;

/**
 * Objects under `<dataDir>/images/<folder>/`. A `put` goes to a temporary file in the target
 * folder (same file system, so the rename is atomic) and is flushed before it is renamed into
 * place. A `putNew` of a buffer is appended to the folder's segment file with group commit (see
 * SegmentAppender): its id says where it lies, so no index is kept; a stream, or a buffer too
 * large for a segment, is written and flushed under its own name, which nobody can ask for before
 * it is whole. After a rename or a new name the folder is flushed too, and a folder made here has
 * its parent flushed, so that no name a caller was given is lost to a crash. Temporary files and
 * segments have dot-names, which no key can reach.
 */
export class DiskBlobStore implements BlobStore {
  readonly root: string;
  /** Folders made by this store; a write into one needs no mkdir (one folder per hour). */
  private readonly folders = new Set<string>();
  private readonly segments: SegmentAppender;

  constructor(dataDir: string, options: { now?: () => number } = {}) {
    this.root = path.join(path.resolve(dataDir), 'images');
    this.segments = new SegmentAppender(this.root, {
      maxSegmentBytes: MAX_SEGMENT_BYTES,
      recheckAfterMs: SEGMENT_RECHECK_MS,
      now: options.now ?? Date.now,
    });
  }

  private pathOf(key: BlobKey): string {
    assertBlobKey(key);
    return path.join(this.root, ...key.split('/'));
  }

  /** Where a key's bytes lie: a record of a segment, or a file of its own. */
  private locate(key: BlobKey): { file: string; record?: SegmentRecord } {
    const file = this.pathOf(key);
    const name = path.basename(file);
    const dot = name.indexOf('.');
    const record = parseSegmentRecordId(dot < 0 ? name : name.slice(0, dot));
    if (record === undefined) return { file };
    return { file: path.join(path.dirname(file), segmentFileName(record.tag)), record };
  }

  async putNew(folder: string, body: Buffer | Readable, extension: string): Promise<NewBlob> {
    assertFolder(folder);
    assertExtension(extension);
    if (Buffer.isBuffer(body) && body.length > 0 && body.length <= SEGMENT_RECORD_LIMIT_BYTES) {
      const id = segmentRecordId(await this.segments.append(folder, body));
      return { id, key: `${folder}/${id}${extension}`, size: body.length };
    }
    const id = newImageId();
    const key: BlobKey = `${folder}/${id}${extension}`;
    const target = this.pathOf(key);
    const { size } = await this.writing(
      body,
      async () => {
        const size = await this.writeInto(target, body);
        await syncDirectory(path.dirname(target));
        return { size };
      },
      async (error) => {
        // An object that was there already is not ours to remove.
        if ((error as NodeJS.ErrnoException | null)?.code !== 'EEXIST')
          await rm(target, { force: true });
      },
    );
    return { id, key, size };
  }

  async put(key: BlobKey, body: Buffer | Readable): Promise<BlobHead> {
    const { file: target, record } = this.locate(key);
    if (record !== undefined) throw new TypeError(`${key} names a segment record, made by putNew`);
    const temporary = path.join(
      path.dirname(target),
      `.${path.basename(target)}.${randomBytes(6).toString('hex')}.tmp`,
    );
    return this.writing(
      body,
      async () => {
        const size = await this.writeInto(temporary, body);
        await rename(temporary, target);
        await syncDirectory(path.dirname(target));
        return { size };
      },
      () => rm(temporary, { force: true }),
    );
  }

  /** Runs `write`; when it fails, a stream body is destroyed and `cleanUp` removes what it left. */
  private async writing(
    body: Buffer | Readable,
    write: () => Promise<BlobHead>,
    cleanUp: (error: unknown) => Promise<void>,
  ): Promise<BlobHead> {
    // Until the pipeline listens, a source error would be an uncaught exception; the pipeline
    // still sees the error, because it checks the stream's state when it starts.
    const ignoreUntilPiped = () => {};
    if (!Buffer.isBuffer(body)) body.on('error', ignoreUntilPiped);
    try {
      return await write();
    } catch (error) {
      if (!Buffer.isBuffer(body)) body.destroy();
      await cleanUp(error);
      throw error;
    } finally {
      if (!Buffer.isBuffer(body)) body.off('error', ignoreUntilPiped);
    }
  }

  /** Writes and flushes `file` in its folder, making the folder again if it was removed. */
  private async writeInto(file: string, body: Buffer | Readable): Promise<number> {
    const folder = path.dirname(file);
    try {
      return await this.writeFlushed(file, body, folder);
    } catch (error) {
      // The folder this store remembered making is gone (removed by hand: the sweeper only
      // removes folders whose hour is over). A buffer can be written again; a stream is spent.
      if (!isMissing(error) || !this.folders.delete(folder) || !Buffer.isBuffer(body)) throw error;
      return this.writeFlushed(file, body, folder);
    }
  }

  /** Writes and flushes `file`, making its folder first unless this store already made it. */
  private async writeFlushed(file: string, body: Buffer | Readable, folder: string) {
    if (!this.folders.has(folder)) {
      await makeDirectoryDurably(folder);
      if (this.folders.size >= REMEMBERED_FOLDERS) this.folders.clear();
      this.folders.add(folder);
    }
    if (Buffer.isBuffer(body)) {
      await writeFile(file, body, { flag: 'wx', flush: true });
      return body.length;
    }
    const out = createWriteStream(file, { flags: 'wx', flush: true });
    await pipeline(body, out);
    return out.bytesWritten;
  }

  async get(key: BlobKey): Promise<BlobObject | undefined> {
    const { file, record } = this.locate(key);
    let handle;
    try {
      handle = await open(file, 'r');
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
    try {
      // Size and bytes come from the same open file, so a concurrent delete cannot split them.
      const { size: fileSize } = await handle.stat();
      if (record !== undefined) {
        // A record past the segment's end was never flushed there (or the file was cut short).
        if (fileSize < record.offset + record.length) {
          await handle.close();
          return undefined;
        }
        const stream = handle.createReadStream({
          autoClose: true,
          start: record.offset,
          end: record.offset + record.length - 1,
        });
        return { size: record.length, stream };
      }
      const size = fileSize;
      // Read up to the size, not until a read finds the end: the stream then ends with its last
      // bytes, and the answer's end is not one more trip through the thread pool behind them (a
      // caller who has every byte by Content-Length may close in between, and be miscounted).
      const stream = handle.createReadStream(
        size === 0 ? { autoClose: true } : { autoClose: true, end: size - 1 },
      );
      return { size, stream };
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  async head(key: BlobKey): Promise<BlobHead | undefined> {
    const { file, record } = this.locate(key);
    try {
      const { size } = await stat(file);
      if (record === undefined) return { size };
      return size < record.offset + record.length ? undefined : { size: record.length };
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  async delete(key: BlobKey): Promise<void> {
    const { file, record } = this.locate(key);
    if (record !== undefined)
      throw new TypeError(`${key} shares its segment with other images; it goes with its folder`);
    await rm(file, { force: true });
  }

  async listFolders(): Promise<string[]> {
    try {
      const entries = await readdir(this.root, { withFileTypes: true });
      return entries
        .filter((entry) => entry.isDirectory() && !entry.name.startsWith('.'))
        .map((entry) => entry.name)
        .sort();
    } catch (error) {
      if (isMissing(error)) return [];
      throw error;
    }
  }

  async deleteFolder(folder: string): Promise<number> {
    assertFolder(folder);
    const directory = path.join(this.root, folder);
    let names: string[];
    try {
      names = await readdir(directory);
    } catch (error) {
      if (isMissing(error)) return 0;
      throw error;
    }
    await rm(directory, { recursive: true, force: true });
    // A segment holds many images, but how many is not written anywhere: it counts as one.
    return names.filter((name) => !name.startsWith('.') || isSegmentFileName(name)).length;
  }

  async checkReady(): Promise<void> {
    // Made durably, as the folders below it are: the first images' chain of names all survives.
    await makeDirectoryDurably(this.root);
    await access(this.root, constants.W_OK);
  }

  async close(): Promise<void> {
    await this.segments.close();
  }
}
