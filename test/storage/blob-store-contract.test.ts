import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { after, before, describe, it } from 'node:test';
import type { BlobKey, BlobStore } from '../../src/storage/blob-store.js';
import { BACKENDS, type OpenedBackend } from './backends.js';

async function bytesOf(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** A source that sends some bytes, then fails. */
function brokenSource(): Readable {
  return new Readable({
    read() {
      this.push(randomBytes(1000));
      this.destroy(new Error('source broke'));
    },
  });
}

function chunked(bytes: Buffer, chunkSize: number): Readable {
  return Readable.from(
    (function* () {
      for (let offset = 0; offset < bytes.length; offset += chunkSize)
        yield bytes.subarray(offset, offset + chunkSize);
    })(),
  );
}

for (const backend of BACKENDS) {
  describe(`BlobStore contract: ${backend.name}`, () => {
    let opened: OpenedBackend;
    let store: BlobStore;

    before(async () => {
      opened = await backend.open();
      store = opened.store;
    });
    after(() => opened.close());

    it('stores a Buffer and reads back the same bytes with their size', async () => {
      const bytes = randomBytes(4096);
      assert.deepEqual(await store.put('f1/buffer.png', bytes), { size: 4096 });
      const object = await store.get('f1/buffer.png');
      assert.ok(object);
      assert.equal(object.size, 4096);
      assert.deepEqual(await bytesOf(object.stream), bytes);
      assert.deepEqual(await store.head('f1/buffer.png'), { size: 4096 });
    });

    it('stores a stream of many chunks without knowing its length', async () => {
      const bytes = randomBytes(300_000);
      assert.deepEqual(await store.put('f1/stream.png', chunked(bytes, 7_000)), { size: 300_000 });
      const object = await store.get('f1/stream.png');
      assert.ok(object);
      assert.equal(object.size, 300_000);
      assert.deepEqual(await bytesOf(object.stream), bytes);
    });

    it('stores empty objects', async () => {
      await store.put('f1/empty-buffer.png', Buffer.alloc(0));
      await store.put('f1/empty-stream.png', Readable.from([]));
      for (const key of ['f1/empty-buffer.png', 'f1/empty-stream.png'] as const) {
        assert.deepEqual(await store.head(key), { size: 0 }, key);
        const object = await store.get(key);
        assert.ok(object);
        assert.equal(object.size, 0);
        assert.equal((await bytesOf(object.stream)).length, 0);
      }
    });

    it('replaces an object written again under the same key', async () => {
      await store.put('f1/replaced.png', Buffer.from('first version, longer'));
      await store.put('f1/replaced.png', Buffer.from('second'));
      const object = await store.get('f1/replaced.png');
      assert.ok(object);
      assert.equal(object.size, 6);
      assert.equal(await text(object.stream), 'second');
    });

    it('answers undefined for a missing object, on get and head', async () => {
      assert.equal(await store.get('f1/missing.png'), undefined);
      assert.equal(await store.head('f1/missing.png'), undefined);
      assert.equal(await store.get('no-such-folder/missing.png'), undefined);
    });

    it('deletes an object, and deleting a missing one is no error', async () => {
      await store.put('f1/doomed.png', Buffer.from('x'));
      await store.delete('f1/doomed.png');
      assert.equal(await store.head('f1/doomed.png'), undefined);
      await store.delete('f1/doomed.png');
      await store.delete('never-existed/nothing.png');
    });

    it('lists folders and deletes a whole folder, leaving the others', async () => {
      const keys: BlobKey[] = ['a1/x.png', 'a1/y.png', 'a1/z.png', 'b2/x.png'];
      for (const key of keys) await store.put(key, Buffer.from(key));
      const folders = await store.listFolders();
      assert.ok(folders.includes('a1') && folders.includes('b2'), folders.join());
      assert.equal(await store.deleteFolder('a1'), 3);
      assert.ok(!(await store.listFolders()).includes('a1'));
      assert.equal(await store.head('a1/x.png'), undefined);
      assert.deepEqual(await store.head('b2/x.png'), { size: 8 });
      assert.equal(await store.deleteFolder('a1'), 0);
    });

    it('rejects a stream that fails and leaves nothing under the key', async () => {
      const failing = brokenSource();
      await assert.rejects(store.put('f2/broken.png', failing), /source broke/);
      assert.equal(await store.head('f2/broken.png'), undefined);
    });

    it('stores a new object, a Buffer or a stream, under a name of its own (putNew)', async () => {
      const bytes = randomBytes(200_000);
      const fromBuffer = await store.putNew('f3', bytes, '.png');
      const fromStream = await store.putNew('f3', chunked(bytes, 9_000), '.png');
      for (const stored of [fromBuffer, fromStream]) {
        assert.equal(stored.size, 200_000);
        assert.match(stored.id, /^[A-Za-z0-9_-]{16,64}$/);
        assert.equal(stored.key, `f3/${stored.id}.png`);
        assert.deepEqual(await store.head(stored.key), { size: 200_000 });
        const object = await store.get(stored.key);
        assert.ok(object, stored.key);
        assert.equal(object.size, 200_000);
        assert.deepEqual(await bytesOf(object.stream), bytes, stored.key);
      }
      assert.notEqual(fromBuffer.id, fromStream.id);
    });

    it('keeps many new objects stored at once apart, each with its own bytes (putNew)', async () => {
      const images = Array.from({ length: 60 }, (_, index) => randomBytes(1 + index * 997));
      const stored = await Promise.all(images.map((bytes) => store.putNew('f4', bytes, '.png')));
      assert.equal(new Set(stored.map(({ id }) => id)).size, images.length);
      for (const [index, { key, size }] of stored.entries()) {
        assert.equal(size, images[index]?.length);
        const object = await store.get(key);
        assert.ok(object, key);
        assert.deepEqual(await bytesOf(object.stream), images[index], key);
      }
    });

    it('fails a new object whose stream fails, and leaves nothing readable (putNew)', async () => {
      const before = await store.listFolders();
      await assert.rejects(store.putNew('f5', brokenSource(), '.png'), /source broke/);
      // Whatever the failed write left is never read, and goes with its folder.
      assert.ok((await store.listFolders()).length >= before.length);
    });

    it('refuses a folder or an extension that could escape the store (putNew)', async () => {
      for (const folder of ['..', 'a/b', '.hidden', '', 'a\\b'])
        await assert.rejects(store.putNew(folder, Buffer.from('x'), '.png'), TypeError, folder);
      for (const extension of ['png', '.p/g', '..', '.png/../x'])
        await assert.rejects(store.putNew('f6', Buffer.from('x'), extension), TypeError, extension);
    });

    it('refuses keys that could escape the store or name temporary files', async () => {
      for (const key of [
        '../x/y.png',
        'a/../../y.png',
        'a/.hidden',
        '.a/b',
        'a/b/c',
        'a',
        '/a/b',
        'a\\b/c',
      ]) {
        await assert.rejects(store.put(key as BlobKey, Buffer.from('x')), TypeError, key);
        await assert.rejects(store.get(key as BlobKey), TypeError, key);
      }
      await assert.rejects(store.deleteFolder('..'), TypeError);
      await assert.rejects(store.deleteFolder('a/b'), TypeError);
    });
  });
}
