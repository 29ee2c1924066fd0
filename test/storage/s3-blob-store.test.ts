import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { after, before, beforeEach, describe, it } from 'node:test';
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { MIN_PART_SIZE_BYTES, S3BlobStore } from '../../src/storage/s3-blob-store.js';
import { openS3, TEST_BUCKET, TEST_PREFIX } from './backends.js';

type OpenedS3 = Awaited<ReturnType<typeof openS3>>;

async function bytesOf(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function chunked(bytes: Buffer, chunkSize: number): Readable {
  return Readable.from(
    (function* () {
      for (let offset = 0; offset < bytes.length; offset += chunkSize)
        yield bytes.subarray(offset, offset + chunkSize);
    })(),
  );
}

describe('S3BlobStore against the S3 protocol', () => {
  let opened: OpenedS3;

  before(async () => {
    opened = await openS3({ partSizeBytes: MIN_PART_SIZE_BYTES });
  });
  after(() => opened.close());
  beforeEach(() => {
    opened.s3.requests.length = 0;
  });

  const operations = () => opened.s3.requests.map((request) => request.operation);

  it('sends a Buffer and a stream shorter than one part with a single PutObject', async () => {
    await opened.store.put('one/buffer.png', randomBytes(1000));
    await opened.store.put('one/stream.png', chunked(randomBytes(100_000), 10_000));
    assert.deepEqual(operations(), ['PutObject', 'PutObject']);
    const stored = opened.s3.objects(TEST_BUCKET).get(`${TEST_PREFIX}one/stream.png`);
    assert.equal(stored?.contentType, 'image/png');
    assert.equal(stored.body.length, 100_000);
  });

  it('sends a longer stream as a multipart upload, one bounded part at a time', async () => {
    const bytes = randomBytes(2 * MIN_PART_SIZE_BYTES + 12_345);
    const head = await opened.store.put('multi/big.png', chunked(bytes, 64 * 1024));
    assert.deepEqual(head, { size: bytes.length });
    assert.deepEqual(operations(), [
      'CreateMultipartUpload',
      'UploadPart',
      'UploadPart',
      'UploadPart',
      'CompleteMultipartUpload',
    ]);
    for (const request of opened.s3.requests.filter((r) => r.operation === 'UploadPart'))
      assert.ok(Number(request.headers['content-length']) <= MIN_PART_SIZE_BYTES + 64 * 1024);
    assert.equal(opened.s3.pendingUploads(), 0);
    const object = await opened.store.get('multi/big.png');
    assert.ok(object);
    assert.equal(object.size, bytes.length);
    assert.deepEqual(await bytesOf(object.stream), bytes);
  });

  it('sends a Buffer longer than one part as a multipart upload too', async () => {
    const bytes = randomBytes(MIN_PART_SIZE_BYTES + 1);
    assert.deepEqual(await opened.store.put('multi/buffer.png', bytes), { size: bytes.length });
    assert.deepEqual(operations(), [
      'CreateMultipartUpload',
      'UploadPart',
      'UploadPart',
      'CompleteMultipartUpload',
    ]);
    const stored = opened.s3.objects(TEST_BUCKET).get(`${TEST_PREFIX}multi/buffer.png`);
    assert.equal(stored?.contentType, 'image/png');
    assert.deepEqual(stored.body, bytes);
  });

  it('aborts the multipart upload when the source stream fails midway', async () => {
    let sent = 0;
    const failing = new Readable({
      read() {
        if (sent >= MIN_PART_SIZE_BYTES + 100_000) {
          this.destroy(new Error('engine crashed'));
          return;
        }
        sent += 50_000;
        this.push(randomBytes(50_000));
      },
    });
    await assert.rejects(opened.store.put('multi/broken.png', failing), /engine crashed/);
    assert.ok(operations().includes('AbortMultipartUpload'), operations().join());
    assert.equal(opened.s3.pendingUploads(), 0);
    assert.equal(await opened.store.head('multi/broken.png'), undefined);
  });

  it('keeps every key under the prefix and ignores objects outside it', async () => {
    const objects = opened.s3.objects(TEST_BUCKET);
    objects.clear();
    await opened.store.put('2030-01-01T00/a.png', Buffer.from('a'));
    objects.set('someone-else/2030-01-01T00/b.png', {
      ...objects.get(`${TEST_PREFIX}2030-01-01T00/a.png`)!,
    });
    objects.set('2030-01-01T00/c.png', { ...objects.get(`${TEST_PREFIX}2030-01-01T00/a.png`)! });
    assert.deepEqual(
      [...objects.keys()].filter((key) => key.startsWith(TEST_PREFIX)),
      [`${TEST_PREFIX}2030-01-01T00/a.png`],
    );
    assert.deepEqual(await opened.store.listFolders(), ['2030-01-01T00']);
    assert.equal(await opened.store.deleteFolder('2030-01-01T00'), 1);
    assert.deepEqual([...objects.keys()].sort(), [
      '2030-01-01T00/c.png',
      'someone-else/2030-01-01T00/b.png',
    ]);
  });

  it('pages through more than 1000 folders and deletes more than 1000 objects in batches', async () => {
    const objects = opened.s3.objects(TEST_BUCKET);
    objects.clear();
    await opened.store.put('template/x.png', Buffer.from('x'));
    const template = objects.get(`${TEST_PREFIX}template/x.png`)!;
    for (let index = 0; index < 1010; index += 1) {
      objects.set(`${TEST_PREFIX}folder-${String(index).padStart(4, '0')}/x.png`, template);
      objects.set(`${TEST_PREFIX}crowded/${String(index).padStart(4, '0')}.png`, template);
    }
    opened.s3.requests.length = 0;
    const folders = await opened.store.listFolders();
    assert.equal(folders.length, 1012);
    assert.ok(folders.includes('crowded') && folders.includes('folder-1009'));
    assert.equal(operations().filter((name) => name === 'ListObjectsV2').length, 2);

    opened.s3.requests.length = 0;
    assert.equal(await opened.store.deleteFolder('crowded'), 1010);
    assert.equal(operations().filter((name) => name === 'DeleteObjects').length, 2);
    assert.ok(![...objects.keys()].some((key) => key.startsWith(`${TEST_PREFIX}crowded/`)));
    assert.equal(objects.size, 1011);
  });

  it('fails a read whose bytes no longer match the stored checksum', async () => {
    await opened.store.put('check/a.png', Buffer.from('original bytes'));
    const stored = opened.s3.objects(TEST_BUCKET).get(`${TEST_PREFIX}check/a.png`)!;
    stored.body = Buffer.from('tampered bytes');
    const object = await opened.store.get('check/a.png');
    assert.ok(object);
    await assert.rejects(bytesOf(object.stream), /Checksum mismatch/);
  });

  it('treats a missing bucket as an error, not as a missing image', async () => {
    const wrong = new S3BlobStore({ ...opened.target, bucket: 'no-such-bucket' });
    try {
      await assert.rejects(wrong.get('a/b.png'), /bucket/i);
      await assert.rejects(wrong.put('a/b.png', Buffer.from('x')), /bucket/i);
    } finally {
      await wrong.close();
    }
  });
});

describe('the fake S3 server speaks what the SDK sends', () => {
  let opened: OpenedS3;
  let client: S3Client;

  before(async () => {
    opened = await openS3();
    client = new S3Client({
      region: 'us-east-1',
      endpoint: opened.s3.endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
    });
  });
  after(async () => {
    client.destroy();
    await opened.close();
  });

  it('decodes an aws-chunked streaming upload with a trailing checksum', async () => {
    const parts = [Buffer.from('hello, '), Buffer.from('chunked '), Buffer.from('world')];
    await client.send(
      new PutObjectCommand({
        Bucket: TEST_BUCKET,
        Key: 'raw/chunked.txt',
        Body: Readable.from(parts),
        ContentLength: 20,
      }),
    );
    const [request] = opened.s3.requests.filter((r) => r.key === 'raw/chunked.txt');
    assert.equal(request?.headers['content-encoding'], 'aws-chunked');
    assert.equal(request.headers['x-amz-trailer'], 'x-amz-checksum-crc32');
    const response = await client.send(
      new GetObjectCommand({ Bucket: TEST_BUCKET, Key: 'raw/chunked.txt' }),
    );
    assert.equal(await response.Body?.transformToString(), 'hello, chunked world');
  });

  it('refuses a body whose checksum does not match, as S3 does', async () => {
    const response = await fetch(`${opened.s3.endpoint}/${TEST_BUCKET}/raw/bad.txt`, {
      method: 'PUT',
      headers: { 'x-amz-checksum-crc32': 'AAAAAA==' },
      body: 'some bytes',
    });
    assert.equal(response.status, 400);
    assert.match(await response.text(), /<Code>BadDigest<\/Code>/);
    assert.equal(opened.s3.objects(TEST_BUCKET).has('raw/bad.txt'), false);
  });
});
