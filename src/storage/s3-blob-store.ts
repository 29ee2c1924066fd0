import { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  type CompletedPart,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import {
  assertBlobKey,
  assertFolder,
  type BlobHead,
  type BlobKey,
  type BlobObject,
  type BlobStore,
} from './blob-store.js';

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

/**
 * Cuts a stream into parts of at least `partSize` bytes (the last may be smaller), holding at
 * most one part in memory. A first part smaller than `partSize` means the stream has ended.
 */
async function* partsOf(stream: Readable, partSize: number): AsyncGenerator<Buffer> {
  let chunks: Buffer[] = [];
  let size = 0;
  let yielded = false;
  for await (const chunk of stream) {
    const bytes = asBuffer(chunk);
    chunks.push(bytes);
    size += bytes.length;
    if (size >= partSize) {
      yield Buffer.concat(chunks, size);
      yielded = true;
      chunks = [];
      size = 0;
    }
  }
  if (size > 0 || !yielded) yield Buffer.concat(chunks, size);
}

/**
 * Objects in an S3-compatible bucket, at `<prefix><folder>/<name>`. A Buffer or a stream that
 * ends within one part goes up with one PutObject; a longer stream goes up as a multipart
 * upload, one part in memory at a time, so memory per upload is bounded by the part size and no
 * stream length needs to be known in advance. A failed multipart upload is aborted.
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

  async put(key: BlobKey, body: Buffer | Readable): Promise<BlobHead> {
    const objectKey = this.objectKey(key);
    if (Buffer.isBuffer(body)) return this.putWhole(objectKey, body);
    const parts = partsOf(body, this.partSize);
    try {
      const first = await parts.next();
      const head = first.done ? Buffer.alloc(0) : first.value;
      if (head.length < this.partSize) return await this.putWhole(objectKey, head);
      return await this.putMultipart(objectKey, head, parts);
    } finally {
      // Ends the generator, which destroys the source stream if it was not read to the end.
      await parts.return(undefined);
    }
  }

  private async putWhole(objectKey: string, bytes: Buffer): Promise<BlobHead> {
    await this.client.send(
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: objectKey,
        Body: bytes,
        ContentLength: bytes.length,
        ContentType: contentTypeOf(objectKey),
      }),
    );
    return { size: bytes.length };
  }

  private async putMultipart(
    objectKey: string,
    firstPart: Buffer,
    rest: AsyncGenerator<Buffer>,
  ): Promise<BlobHead> {
    const { UploadId: uploadId } = await this.client.send(
      new CreateMultipartUploadCommand({
        Bucket: this.bucket,
        Key: objectKey,
        ContentType: contentTypeOf(objectKey),
        ChecksumAlgorithm: 'CRC32',
      }),
    );
    if (uploadId === undefined) throw new Error('S3 CreateMultipartUpload returned no UploadId');
    try {
      const completed: CompletedPart[] = [];
      let size = 0;
      let part: Buffer | undefined = firstPart;
      while (part !== undefined) {
        const partNumber = completed.length + 1;
        const uploaded = await this.client.send(
          new UploadPartCommand({
            Bucket: this.bucket,
            Key: objectKey,
            UploadId: uploadId,
            PartNumber: partNumber,
            Body: part,
            ContentLength: part.length,
            ChecksumAlgorithm: 'CRC32',
          }),
        );
        completed.push({
          PartNumber: partNumber,
          ETag: uploaded.ETag,
          ChecksumCRC32: uploaded.ChecksumCRC32,
        });
        size += part.length;
        const next = await rest.next();
        part = next.done ? undefined : next.value;
      }
      await this.client.send(
        new CompleteMultipartUploadCommand({
          Bucket: this.bucket,
          Key: objectKey,
          UploadId: uploadId,
          MultipartUpload: { Parts: completed },
        }),
      );
      return { size };
    } catch (error) {
      await this.client
        .send(
          new AbortMultipartUploadCommand({
            Bucket: this.bucket,
            Key: objectKey,
            UploadId: uploadId,
          }),
        )
        // The upload's own failure is the one worth reporting; an orphaned upload is reclaimed
        // by a bucket lifecycle rule (docs/storage.md).
        .catch(() => undefined);
      throw error;
    }
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
    let continuationToken: string | undefined;
    do {
      const page = await this.client.send(
        new ListObjectsV2Command({
          Bucket: this.bucket,
          Prefix: this.prefix,
          Delimiter: '/',
          ContinuationToken: continuationToken,
        }),
      );
      for (const { Prefix: folderPrefix } of page.CommonPrefixes ?? []) {
        if (folderPrefix === undefined) continue;
        folders.push(folderPrefix.slice(this.prefix.length, -1));
      }
      continuationToken = page.IsTruncated === true ? page.NextContinuationToken : undefined;
    } while (continuationToken !== undefined);
    return folders.sort();
  }

  async deleteFolder(folder: string): Promise<number> {
    assertFolder(folder);
    let deleted = 0;
    let continuationToken: string | undefined;
    do {
      const page = await this.client.send(
        new ListObjectsV2Command({
          Bucket: this.bucket,
          Prefix: `${this.prefix}${folder}/`,
          MaxKeys: MAX_KEYS_PER_PAGE,
          ContinuationToken: continuationToken,
        }),
      );
      const keys = (page.Contents ?? []).flatMap(({ Key }) => (Key === undefined ? [] : [Key]));
      if (keys.length > 0) {
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
      continuationToken = page.IsTruncated === true ? page.NextContinuationToken : undefined;
    } while (continuationToken !== undefined);
    return deleted;
  }

  async checkReady(): Promise<void> {
    await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
  }

  async close(): Promise<void> {
    this.client.destroy();
  }
}
