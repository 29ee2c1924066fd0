import { Readable } from 'node:stream';
import {
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  paginateListObjectsV2,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
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
import { newImageId } from './object-keys.js';

export interface S3BlobStoreOptions {
  bucket: string;
  /** Undefined: AWS's own endpoint for the region. */
  endpoint: string | undefined;
  region: string;
  /** Both undefined: the SDK's default credential chain (environment, profile, instance role). */
  accessKeyId: string | undefined;
  secretAccessKey: string | undefined;
  /** `https://endpoint/bucket/key` instead of `https://bucket.endpoint/key`; most non-AWS servers need it. */
  forcePathStyle: boolean;
  /** Prepended to every key: empty, or ending in `/`. */
  prefix: string;
  /** Size of one multipart part, at least S3's minimum of 5 MiB. */
  partSizeBytes?: number;
}

export const MIN_PART_SIZE_BYTES = 5 * 1024 * 1024;
const DEFAULT_PART_SIZE_BYTES = 8 * 1024 * 1024;
/** One part in flight per upload, so memory per upload stays bounded by the part size. */
const PARTS_IN_FLIGHT = 1;
/** DeleteObjects takes at most 1000 keys, which is also ListObjectsV2's largest page. */
const MAX_KEYS_PER_PAGE = 1000;

function isMissingObject(error: unknown): boolean {
  // HEAD answers carry no body, so a missing key shows up as a bare 404 named NotFound.
  return (
    error instanceof S3ServiceException && (error.name === 'NoSuchKey' || error.name === 'NotFound')
  );
}

/** Lets the objects make sense to anyone browsing the bucket or serving it directly. */
function contentTypeOf(objectKey: string): string {
  return objectKey.endsWith('.png') ? 'image/png' : 'application/octet-stream';
}

function asBuffer(chunk: unknown): Buffer {
  if (Buffer.isBuffer(chunk)) return chunk;
  if (chunk instanceof Uint8Array) return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length);
  throw new TypeError('blob streams must yield bytes, not strings or objects');
}

/** A stream's bytes passed on unchanged, with the running total of what went through. */
function countingBytes(source: Readable): { stream: Readable; bytesSeen: () => number } {
  let seen = 0;
  async function* passOn(): AsyncGenerator<Buffer> {
    for await (const chunk of source) {
      const bytes = asBuffer(chunk);
      seen += bytes.length;
      yield bytes;
    }
  }
  return { stream: Readable.from(passOn(), { objectMode: false }), bytesSeen: () => seen };
}

/**
 * Objects in an S3-compatible bucket, at `<prefix><folder>/<name>`. Writes go through the SDK's
 * `Upload`: a body that fits in one part goes up with one PutObject, a longer one as a
 * multipart upload holding one part in memory at a time, so memory per upload is bounded by the
 * part size and no stream length needs to be known in advance. A failed multipart upload is
 * aborted.
 */
export class S3BlobStore implements BlobStore {
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly prefix: string;
  private readonly partSize: number;

  constructor(options: S3BlobStoreOptions) {
    if (options.prefix !== '' && !options.prefix.endsWith('/'))
      throw new TypeError('the S3 key prefix must be empty or end with "/"');
    const partSize = options.partSizeBytes ?? DEFAULT_PART_SIZE_BYTES;
    if (partSize < MIN_PART_SIZE_BYTES)
      throw new RangeError(`the part size must be at least ${MIN_PART_SIZE_BYTES} bytes`);
    this.bucket = options.bucket;
    this.prefix = options.prefix;
    this.partSize = partSize;
    this.client = new S3Client({
      region: options.region,
      endpoint: options.endpoint,
      forcePathStyle: options.forcePathStyle,
      credentials:
        options.accessKeyId !== undefined && options.secretAccessKey !== undefined
          ? { accessKeyId: options.accessKeyId, secretAccessKey: options.secretAccessKey }
          : undefined,
      maxAttempts: 3,
      requestHandler: {
        connectionTimeout: 5_000,
        // Image downloads hold a socket while the caller reads; the SDK's default of 50 is tight.
        httpAgent: { keepAlive: true, maxSockets: 256 },
        httpsAgent: { keepAlive: true, maxSockets: 256 },
      },
    });
  }

  private objectKey(key: BlobKey): string {
    assertBlobKey(key);
    return `${this.prefix}${key}`;
  }

  /** An object PUT is all-or-nothing already: a new object is written as any other. */
  async putNew(folder: string, body: Buffer | Readable, extension: string): Promise<NewBlob> {
    assertFolder(folder);
    assertExtension(extension);
    const id = newImageId();
    const key: BlobKey = `${folder}/${id}${extension}`;
    const { size } = await this.put(key, body);
    return { id, key, size };
  }

  async put(key: BlobKey, body: Buffer | Readable): Promise<BlobHead> {
    const objectKey = this.objectKey(key);
    if (Buffer.isBuffer(body)) {
      await this.upload(objectKey, body);
      return { size: body.length };
    }
    const counted = countingBytes(body);
    try {
      await this.upload(objectKey, counted.stream);
    } finally {
      // Stops reading a source the upload gave up on; a source read to its end is unaffected.
      counted.stream.destroy();
    }
    return { size: counted.bytesSeen() };
  }

  private async upload(objectKey: string, body: Buffer | Readable): Promise<void> {
    await new Upload({
      client: this.client,
      params: {
        Bucket: this.bucket,
        Key: objectKey,
        Body: body,
        ContentType: contentTypeOf(objectKey),
        ChecksumAlgorithm: 'CRC32',
      },
      partSize: this.partSize,
      queueSize: PARTS_IN_FLIGHT,
      // A failed multipart upload is aborted; one whose abort fails as well is reclaimed by a
      // bucket lifecycle rule (docs/storage.md).
      leavePartsOnError: false,
    }).done();
  }

  async get(key: BlobKey): Promise<BlobObject | undefined> {
    try {
      const response = await this.client.send(
        new GetObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) }),
      );
      if (!(response.Body instanceof Readable) || response.ContentLength === undefined)
        throw new Error('S3 GetObject returned no readable body or no length');
      return { size: response.ContentLength, stream: response.Body };
    } catch (error) {
      if (isMissingObject(error)) return undefined;
      throw error;
    }
  }

  async head(key: BlobKey): Promise<BlobHead | undefined> {
    try {
      const response = await this.client.send(
        new HeadObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) }),
      );
      if (response.ContentLength === undefined) throw new Error('S3 HeadObject returned no length');
      return { size: response.ContentLength };
    } catch (error) {
      if (isMissingObject(error)) return undefined;
      throw error;
    }
  }

  async delete(key: BlobKey): Promise<void> {
    await this.client.send(
      new DeleteObjectCommand({ Bucket: this.bucket, Key: this.objectKey(key) }),
    );
  }

  async listFolders(): Promise<string[]> {
    const folders: string[] = [];
    const pages = paginateListObjectsV2(
      { client: this.client },
      { Bucket: this.bucket, Prefix: this.prefix, Delimiter: '/' },
    );
    for await (const page of pages) {
      for (const { Prefix: folderPrefix } of page.CommonPrefixes ?? []) {
        if (folderPrefix === undefined) continue;
        folders.push(folderPrefix.slice(this.prefix.length, -1));
      }
    }
    return folders.sort();
  }

  async deleteFolder(folder: string): Promise<number> {
    assertFolder(folder);
    let deleted = 0;
    const pages = paginateListObjectsV2(
      { client: this.client, pageSize: MAX_KEYS_PER_PAGE },
      { Bucket: this.bucket, Prefix: `${this.prefix}${folder}/` },
    );
    // Each page is deleted before the next is listed; the continuation token names the last key
    // listed, not a position, so deleting behind it skips nothing.
    for await (const page of pages) {
      const keys = (page.Contents ?? []).flatMap(({ Key }) => (Key === undefined ? [] : [Key]));
      if (keys.length === 0) continue;
      const result = await this.client.send(
        new DeleteObjectsCommand({
          Bucket: this.bucket,
          Delete: { Objects: keys.map((Key) => ({ Key })), Quiet: true },
        }),
      );
      const errors = result.Errors ?? [];
      if (errors.length > 0) {
        const [first] = errors;
        throw new Error(
          `S3 DeleteObjects failed for ${errors.length} of ${keys.length} objects, e.g. ${first?.Key}: ${first?.Code} ${first?.Message}`,
        );
      }
      deleted += keys.length;
    }
    return deleted;
  }

  async checkReady(): Promise<void> {
    await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
  }

  async close(): Promise<void> {
    this.client.destroy();
  }
}
