import { randomBytes } from 'node:crypto';
import { constants, type FileHandle, open, stat } from 'node:fs/promises';
import path from 'node:path';
import { GroupCommit } from '../support/group-commit.js';
import { makeDirectoryDurably, syncDirectory } from '../support/durable-directories.js';

/** Where one appended record lies: in the segment `tag` of its folder, `length` bytes at `offset`. */
export interface SegmentRecord {
  tag: string;
  offset: number;
  length: number;
}

export interface SegmentAppenderOptions {
  /** A segment takes no more records once it holds this many bytes; the next opens a new one. */
  maxSegmentBytes: number;
  /** How long a segment is written to before its path is checked again (removed by hand). */
  recheckAfterMs: number;
  /** Milliseconds since the epoch; injectable for tests. */
  now: () => number;
}

interface OpenSegment {
  folder: string;
  tag: string;
  file: string;
  handle: FileHandle;
  ino: number;
  size: number;
  checkedAt: number;
}

interface Pending {
  folder: string;
  bytes: Buffer;
}

/** Twelve letters and digits: 71 random bits, so a segment's name cannot be guessed. */
const TAG_LENGTH = 12;
const TAG_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
/** At most this many records go into one `writev` and one flush. */
const MAX_GROUP = 128;
/** A writer keeps this many folders' segments open; an hour's turn-over needs two. */
const OPEN_FOLDERS = 4;

const SEGMENT_FILE_PREFIX = '.segment-';

/**
 * O_DSYNC on Linux: a write then returns once its bytes are durable, one call on libuv's pool
 * where a write and an fdatasync took two (measured: 5% of a re-hosted request's CPU). Elsewhere
 * each group is flushed after its write: on macOS libuv's fdatasync is F_FULLFSYNC, which also
 * empties the drive's cache, and O_DSYNC does not.
 */
const WRITE_IS_DURABLE = process.platform === 'linux' ? constants.O_DSYNC : undefined;
/** A new segment (`wx`), durable on each write where the platform allows. */
const NEW_SEGMENT_FLAGS =
  constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (WRITE_IS_DURABLE ?? 0);

/** A segment's file name: a dot-name, which no blob key can reach. */
export function segmentFileName(tag: string): string {
  return `${SEGMENT_FILE_PREFIX}${tag}`;
}

export function isSegmentFileName(name: string): boolean {
  return name.startsWith(SEGMENT_FILE_PREFIX);
}

function newTag(): string {
  const bytes = randomBytes(TAG_LENGTH);
  let tag = '';
  for (const byte of bytes) tag += TAG_ALPHABET[byte % TAG_ALPHABET.length];
  return tag;
}

/**
 * Appends records to segment files, one per folder and writer, with group commit: records that
 * arrive while a write is under way are written together with one `writev`, durable when it
 * returns (O_DSYNC; one `fdatasync` after it where the platform lacks the flag), and each append
 * resolves only once its record is durable. A segment is written by one writer only (its tag is
 * random), from offsets this writer counts itself, so several processes can share a data
 * directory. After any failed write or flush the segment is abandoned (what the kernel kept of it
 * is unknown) and the next record opens a new one.
 */
export class SegmentAppender {
  private readonly segments = new Map<string, OpenSegment>();
  private readonly commits: GroupCommit<Pending, SegmentRecord>;
  private closed = false;

  constructor(
    private readonly root: string,
    private readonly options: SegmentAppenderOptions,
  ) {
    this.commits = new GroupCommit<Pending, SegmentRecord>({
      maxSize: MAX_GROUP,
      execute: (items) => this.appendGroup(items),
      // A disk that failed one write or flush is not trusted with the same group again.
      failsEveryone: () => true,
    });
  }

  /** Resolves with the record's place once its bytes are durable. */
  append(folder: string, bytes: Buffer): Promise<SegmentRecord> {
    if (this.closed) return Promise.reject(new Error('the segment appender is closed'));
    return this.commits.submit({ folder, bytes });
  }

  /** Closes the open segments; records appended later are refused. */
  async close(): Promise<void> {
    this.closed = true;
    const open = [...this.segments.values()];
    this.segments.clear();
    await Promise.allSettled(open.map((segment) => segment.handle.close()));
  }

  private async appendGroup(items: readonly Pending[]): Promise<SegmentRecord[]> {
    const records: SegmentRecord[] = new Array<SegmentRecord>(items.length);
    // Nearly always one folder; at the turn of an hour, two.
    const folders = new Map<string, number[]>();
    items.forEach((item, index) => {
      const indexes = folders.get(item.folder);
      if (indexes === undefined) folders.set(item.folder, [index]);
      else indexes.push(index);
    });
    for (const [folder, indexes] of folders) {
      const buffers = indexes.map((index) => (items[index] as Pending).bytes);
      let total = 0;
      for (const buffer of buffers) total += buffer.length;
      const segment = this.currentSegment(folder) ?? (await this.segmentFor(folder));
      try {
        const { bytesWritten } = await segment.handle.writev(buffers, segment.size);
        if (bytesWritten !== total)
          throw new Error(`the disk took ${bytesWritten} of ${total} bytes`);
        if (WRITE_IS_DURABLE === undefined) await segment.handle.datasync();
      } catch (error) {
        await this.retire(segment);
        throw error;
      }
      let offset = segment.size;
      indexes.forEach((index, position) => {
        const length = (buffers[position] as Buffer).length;
        records[index] = { tag: segment.tag, offset, length };
        offset += length;
      });
      segment.size = offset;
      if (segment.size >= this.options.maxSegmentBytes) await this.retire(segment);
    }
    return records;
  }

  /** The folder's open segment when it was checked recently enough to need no look, at once. */
  private currentSegment(folder: string): OpenSegment | undefined {
    const current = this.segments.get(folder);
    if (current === undefined) return undefined;
    return this.options.now() - current.checkedAt < this.options.recheckAfterMs
      ? current
      : undefined;
  }

  /**
   * The folder's open segment after a look at its path, when currentSegment has none at once: a
   * segment gone from its path (removed by hand) is retired, and a new one made.
   */
  private async segmentFor(folder: string): Promise<OpenSegment> {
    const current = this.segments.get(folder);
    if (current !== undefined) {
      if (await this.stillInPlace(current)) {
        current.checkedAt = this.options.now();
        return current;
      }
      await this.retire(current);
    }
    return this.create(folder);
  }

  private async stillInPlace(segment: OpenSegment): Promise<boolean> {
    try {
      return (await stat(segment.file)).ino === segment.ino;
    } catch {
      return false;
    }
  }

  /**
   * A new segment: created with O_EXCL, and its folder flushed, so the name is as durable as the
   * records that will be flushed into it.
   */
  private async create(folder: string): Promise<OpenSegment> {
    if (this.closed) throw new Error('the segment appender is closed');
    const directory = path.join(this.root, folder);
    await makeDirectoryDurably(directory);
    const tag = newTag();
    const file = path.join(directory, segmentFileName(tag));
    const handle = await open(file, NEW_SEGMENT_FLAGS);
    try {
      const { ino } = await handle.stat();
      await syncDirectory(directory);
      const segment: OpenSegment = {
        folder,
        tag,
        file,
        handle,
        ino,
        size: 0,
        checkedAt: this.options.now(),
      };
      this.segments.set(folder, segment);
      await this.closeOldest();
      return segment;
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  /** Keeps the open handles bounded: the segment opened longest ago is closed first. */
  private async closeOldest(): Promise<void> {
    while (this.segments.size > OPEN_FOLDERS) {
      const oldest = this.segments.values().next().value as OpenSegment;
      await this.retire(oldest);
    }
  }

  /**
   * Stops writing to a segment: a whole one (full, or the oldest open), whose records stay
   * readable by path and are durable already, or one abandoned after a failure or a move, whose
   * last group has failed already. Either way a failure to close is no reason to fail anything.
   */
  private async retire(segment: OpenSegment): Promise<void> {
    if (this.segments.get(segment.folder) === segment) this.segments.delete(segment.folder);
    await segment.handle.close().catch(() => {});
  }
}
