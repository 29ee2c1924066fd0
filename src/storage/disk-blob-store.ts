import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import {
  access,
  constants,
  mkdir,
  open,
  readdir,
  rename,
  rm,
  stat,
  writeFile,
} from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  assertBlobKey,
  assertFolder,
  type BlobHead,
  type BlobKey,
  type BlobObject,
  type BlobStore,
} from './blob-store.js';

/** Far more than the folders of a day's images; past it the memory starts afresh. */
const REMEMBERED_FOLDERS = 64;

function isMissing(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | null)?.code === 'ENOENT';
}

/**
 * Objects as files under `<dataDir>/images/<folder>/<name>`. A `put` goes to a temporary file in
 * the target folder (same file system, so the rename is atomic) and is flushed before it is
 * renamed into place; temporary names start with a dot, which no key can. A `putNew` writes and
 * flushes the file under its own name: nobody can ask for it before it is whole.
 */
export class DiskBlobStore implements BlobStore {
  readonly root: string;
  /** Folders made by this store; a write into one needs no mkdir (one folder per hour). */
  private readonly folders = new Set<string>();

  constructor(dataDir: string) {
    this.root = path.join(path.resolve(dataDir), 'images');
  }

  private pathOf(key: BlobKey): string {
    assertBlobKey(key);
    return path.join(this.root, ...key.split('/'));
  }

  /**
   * Written straight under its name, flushed, with no temporary file or rename: one file-system
   * operation fewer per generated image. Flushing the new file also makes its name durable.
   */
  async putNew(key: BlobKey, body: Buffer | Readable): Promise<BlobHead> {
    const target = this.pathOf(key);
    return this.writing(
      body,
      async () => ({ size: await this.writeInto(target, body) }),
      async (error) => {
        // An object that was there already is not ours to remove.
        if ((error as NodeJS.ErrnoException | null)?.code !== 'EEXIST')
          await rm(target, { force: true });
      },
    );
  }

  async put(key: BlobKey, body: Buffer | Readable): Promise<BlobHead> {
    const target = this.pathOf(key);
    const temporary = path.join(
      path.dirname(target),
      `.${path.basename(target)}.${randomBytes(6).toString('hex')}.tmp`,
    );
    return this.writing(
      body,
      async () => {
        const size = await this.writeInto(temporary, body);
        await rename(temporary, target);
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
      await mkdir(folder, { recursive: true });
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
    let handle;
    try {
      handle = await open(this.pathOf(key), 'r');
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
    try {
      // Size and bytes come from the same open file, so a concurrent delete cannot split them.
      const { size } = await handle.stat();
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
    try {
      const { size } = await stat(this.pathOf(key));
      return { size };
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  async delete(key: BlobKey): Promise<void> {
    await rm(this.pathOf(key), { force: true });
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
    return names.filter((name) => !name.startsWith('.')).length;
  }

  async checkReady(): Promise<void> {
    await mkdir(this.root, { recursive: true });
    await access(this.root, constants.W_OK);
  }

  async close(): Promise<void> {}
}
