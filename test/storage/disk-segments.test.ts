import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm, truncate } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { BlobKey } from '../../src/storage/blob-store.js';
import { DiskBlobStore } from '../../src/storage/disk-blob-store.js';

const FOLDER = '2030-01-01T00';
const WRITER = fileURLToPath(new URL('../fixtures/segment-writes.ts', import.meta.url));

async function bytesOf(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

async function read(store: DiskBlobStore, key: BlobKey): Promise<Buffer | undefined> {
  const object = await store.get(key);
  return object === undefined ? undefined : bytesOf(object.stream);
}

async function segmentsIn(dataDir: string, folder = FOLDER): Promise<string[]> {
  const names = await readdir(path.join(dataDir, 'images', folder));
  return names.filter((name) => name.startsWith('.segment-')).sort();
}

/** Runs the writer fixture with the process's file-size limit at `limitKiB`. */
function writeUnderFileLimit(
  dataDir: string,
  limitKiB: number,
  sizes: number[],
): Promise<{ ok: boolean; key?: BlobKey; fill?: number; code?: string }[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      'bash',
      [
        '-c',
        `ulimit -f ${limitKiB}; exec "$0" --import tsx "$@"`,
        process.execPath,
        WRITER,
        dataDir,
        ...sizes.map(String),
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) reject(new Error(`the writer exited with ${code}`));
      else
        resolve(
          output
            .trim()
            .split('\n')
            .map((line) => JSON.parse(line)),
        );
    });
  });
}

describe('DiskBlobStore segments (new images as records of a shared file)', () => {
  let dataDir: string;
  let store: DiskBlobStore;
  before(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'imagegate-segments-'));
    store = new DiskBlobStore(dataDir);
  });
  after(async () => {
    await store.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('writes images stored at once into one segment, each readable by its id alone', async () => {
    const folder = '2030-01-01T01';
    const images = Array.from({ length: 300 }, (_, index) => randomBytes(100 + index * 37));
    const stored = await Promise.all(images.map((bytes) => store.putNew(folder, bytes, '.png')));
    assert.deepEqual(await readdir(path.join(dataDir, 'images', folder)).then((n) => n.length), 1);
    assert.equal((await segmentsIn(dataDir, folder)).length, 1);
    for (const [index, { key, id }] of stored.entries()) {
      assert.match(id, /^[A-Za-z0-9]{12}_[0-9a-z]{7}_[0-9a-z]{5}$/);
      assert.deepEqual(await store.head(key), { size: images[index]?.length });
      assert.deepEqual(await read(store, key), images[index]);
    }
  });

  it('gives streams and images over 4 MiB a file of their own', async () => {
    const folder = '2030-01-01T02';
    const large = randomBytes(4 * 1024 * 1024 + 1);
    const stored = await store.putNew(folder, large, '.png');
    assert.match(stored.id, /^[A-Za-z0-9_-]{24}$/);
    assert.deepEqual(await readdir(path.join(dataDir, 'images', folder)), [`${stored.id}.png`]);
    assert.deepEqual(await read(store, stored.key), large);
  });

  it('serves one node’s records to another sharing the directory, each writing its own segment', async () => {
    const other = new DiskBlobStore(dataDir);
    try {
      const mine = await store.putNew(FOLDER, Buffer.from('from the first node'), '.png');
      const theirs = await other.putNew(FOLDER, Buffer.from('from the second node'), '.png');
      assert.notEqual(mine.id.slice(0, 12), theirs.id.slice(0, 12));
      assert.deepEqual(await read(other, mine.key), Buffer.from('from the first node'));
      assert.deepEqual(await read(store, theirs.key), Buffer.from('from the second node'));
    } finally {
      await other.close();
    }
  });

  it('serves records after a restart, and never appends to a segment of an earlier run', async () => {
    const before = await store.putNew(FOLDER, Buffer.from('before the restart'), '.png');
    const segments = await segmentsIn(dataDir);
    const restarted = new DiskBlobStore(dataDir);
    try {
      assert.deepEqual(await read(restarted, before.key), Buffer.from('before the restart'));
      const afterwards = await restarted.putNew(FOLDER, Buffer.from('after it'), '.png');
      assert.notEqual(afterwards.id.slice(0, 12), before.id.slice(0, 12));
      assert.equal((await segmentsIn(dataDir)).length, segments.length + 1);
      assert.deepEqual(await read(restarted, afterwards.key), Buffer.from('after it'));
    } finally {
      await restarted.close();
    }
  });

  it('answers no object for a record past the end of a segment cut short', async () => {
    const folder = '2030-01-01T03';
    const first = await store.putNew(folder, Buffer.alloc(1000, 1), '.png');
    const second = await store.putNew(folder, Buffer.alloc(1000, 2), '.png');
    const [segment] = await segmentsIn(dataDir, folder);
    await truncate(path.join(dataDir, 'images', folder, String(segment)), 1500);
    assert.deepEqual(await read(store, first.key), Buffer.alloc(1000, 1));
    assert.equal(await store.get(second.key), undefined);
    assert.equal(await store.head(second.key), undefined);
  });

  it('starts a new segment once the folder was removed by hand, losing nothing stored after', async () => {
    let now = Date.UTC(2030, 0, 1);
    const local = new DiskBlobStore(path.join(dataDir, 'by-hand'), { now: () => now });
    try {
      const folder = '2030-01-01T04';
      await local.putNew(folder, Buffer.from('goes with the folder'), '.png');
      await rm(path.join(local.root, folder), { recursive: true });
      now += 1500;
      const stored = await local.putNew(folder, Buffer.from('stored afterwards'), '.png');
      assert.deepEqual(await read(local, stored.key), Buffer.from('stored afterwards'));
    } finally {
      await local.close();
    }
  });

  it('refuses to replace or delete a single record: it goes with its folder', async () => {
    const stored = await store.putNew(FOLDER, Buffer.from('kept'), '.png');
    await assert.rejects(store.put(stored.key, Buffer.from('other')), TypeError);
    await assert.rejects(store.delete(stored.key), TypeError);
    assert.deepEqual(await read(store, stored.key), Buffer.from('kept'));
  });

  it('fails the images of a write the disk cut short, then stores the next in a new segment', async () => {
    const limited = path.join(dataDir, 'limited');
    // 8 KiB per file: the first image fits, the second would pass the limit, the third fits a
    // new segment.
    const results = await writeUnderFileLimit(limited, 8, [6000, 4000, 3000]);
    assert.equal(results.length, 3);
    const [first, second, third] = results;
    assert.equal(first?.ok, true);
    assert.equal(second?.ok, false);
    assert.equal(third?.ok, true);
    assert.notEqual(
      first?.key?.split('/')[1]?.slice(0, 12),
      third?.key?.split('/')[1]?.slice(0, 12),
    );
    const reader = new DiskBlobStore(limited);
    try {
      assert.deepEqual(await read(reader, first?.key as BlobKey), Buffer.alloc(6000, 1));
      assert.deepEqual(await read(reader, third?.key as BlobKey), Buffer.alloc(3000, 3));
    } finally {
      await reader.close();
    }
  });
});
