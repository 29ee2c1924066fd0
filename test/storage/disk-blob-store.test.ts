import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { DiskBlobStore } from '../../src/storage/disk-blob-store.js';

describe('DiskBlobStore on its own', () => {
  let dataDir: string;
  let store: DiskBlobStore;

  before(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'imagegate-disk-'));
    store = new DiskBlobStore(dataDir);
  });
  after(() => rm(dataDir, { recursive: true, force: true }));

  it('keeps objects as files under <dataDir>/images/<folder>/<name>', async () => {
    await store.put('2030-01-01T00/abc.png', Buffer.from('png bytes'));
    assert.equal(store.root, path.join(dataDir, 'images'));
    assert.equal(
      await readFile(path.join(dataDir, 'images', '2030-01-01T00', 'abc.png'), 'utf8'),
      'png bytes',
    );
  });

  it('writes atomically: while a stream is still arriving, readers see no object', async () => {
    const source = new PassThrough();
    const writing = store.put('atomic/slow.png', source);
    // Drained: the store has taken the first half and is writing it.
    if (!source.write(Buffer.alloc(64 * 1024, 1))) await once(source, 'drain');
    assert.equal(await store.head('atomic/slow.png'), undefined);
    assert.equal(await store.get('atomic/slow.png'), undefined);
    source.end(Buffer.alloc(64 * 1024, 2));
    assert.deepEqual(await writing, { size: 128 * 1024 });
    assert.deepEqual(await store.head('atomic/slow.png'), { size: 128 * 1024 });
  });

  it('leaves no temporary file behind after a failed write', async () => {
    const source = new PassThrough();
    const writing = store.put('failed/never.png', source);
    source.write(Buffer.alloc(1000));
    source.destroy(new Error('caller went away'));
    await assert.rejects(writing, /caller went away/);
    assert.deepEqual(await readdir(path.join(dataDir, 'images', 'failed')), []);
  });

  it('writes a new stream under its own name, with no temporary file', async () => {
    const source = new PassThrough();
    const writing = store.putNew('new', source, '.png');
    if (!source.write(Buffer.alloc(64 * 1024, 1))) await once(source, 'drain');
    const [name] = await readdir(path.join(dataDir, 'images', 'new'));
    assert.match(String(name), /^[A-Za-z0-9_-]{24}\.png$/);
    source.end(Buffer.alloc(64 * 1024, 2));
    const stored = await writing;
    assert.deepEqual(stored, {
      id: String(name).slice(0, 24),
      key: `new/${name}`,
      size: 128 * 1024,
    });
    assert.deepEqual(await store.head(stored.key), { size: 128 * 1024 });
  });

  it('lists no folders before anything was stored', async () => {
    const empty = new DiskBlobStore(path.join(dataDir, 'fresh'));
    assert.deepEqual(await empty.listFolders(), []);
    assert.equal(await empty.deleteFolder('2030-01-01T00'), 0);
  });
});
