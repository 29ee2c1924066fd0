import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import Fastify from 'fastify';
import type { BlobStore } from '../../src/storage/blob-store.js';
import {
  createResultStorage,
  type ResultStorage,
} from '../../src/storage/create-result-storage.js';
import { objectKeyOf } from '../../src/storage/object-keys.js';
import { Sweeper } from '../../src/storage/sweeper.js';
import { type Log, silentLog } from '../../src/support/log.js';
import { BACKENDS, type OpenedBackend } from './backends.js';

const HOUR = 3600 * 1000;
const T0 = Date.UTC(2030, 2, 10, 9, 40, 0);

function keyOfUrl(url: string) {
  const parsed = new URL(url);
  const id = parsed.pathname.split('/').pop()?.replace('.png', '') ?? '';
  return objectKeyOf(id, Number(parsed.searchParams.get('expires')));
}

function activeTimeouts(): number {
  return process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length;
}

for (const backend of BACKENDS) {
  describe(`sweeper on ${backend.name}`, () => {
    const clock = { now: T0 };
    let opened: OpenedBackend;
    let storage: ResultStorage;

    before(async () => {
      opened = await backend.open();
      storage = createResultStorage({
        storage: opened.target,
        publicBaseUrl: 'http://127.0.0.1:8080',
        signingKey: new Uint8Array(32).fill(5),
        uploadSigningKey: new Uint8Array(32).fill(6),
        now: () => clock.now,
        sweepIntervalMs: 0,
      });
    });
    after(async () => {
      await storage.close();
      await opened.close();
    });

    it('deletes images once their expiry hour is over and keeps live ones and foreign folders', async () => {
      clock.now = T0;
      const early = [
        await storage.results.save(Buffer.from('early 1')),
        await storage.results.save(Buffer.from('early 2')),
      ];
      clock.now = T0 + 10 * HOUR;
      const late = await storage.results.save(Buffer.from('late'));
      await storage.blobs.put('backups/keep-me.png', Buffer.from('not ours'));

      // At the expiry second the URLs stop serving; the folder goes when its hour is over.
      clock.now = T0 + 24 * HOUR;
      assert.deepEqual(await storage.sweeper.sweepOnce(), { foldersDeleted: 0, objectsDeleted: 0 });
      clock.now = Date.UTC(2030, 2, 11, 10, 0, 0);
      // On disk the two images of the hour share one segment file, which counts once.
      assert.deepEqual(await storage.sweeper.sweepOnce(), {
        foldersDeleted: 1,
        objectsDeleted: opened.dataDir === undefined ? 2 : 1,
      });

      for (const url of early) assert.equal(await storage.blobs.head(keyOfUrl(url)), undefined);
      assert.deepEqual(await storage.blobs.head(keyOfUrl(late)), { size: 4 });
      assert.deepEqual(await storage.blobs.head('backups/keep-me.png'), { size: 8 });
      assert.ok(!(await storage.blobs.listFolders()).includes('2030-03-11T09'));
      if (opened.s3 !== undefined)
        assert.ok(
          ![...opened.s3.objects('imagegate-test').keys()].some((key) =>
            key.includes('2030-03-11T09'),
          ),
        );

      clock.now = T0 + 35 * HOUR;
      assert.deepEqual(await storage.sweeper.sweepOnce(), { foldersDeleted: 1, objectsDeleted: 1 });
      assert.equal(await storage.blobs.head(keyOfUrl(late)), undefined);
      assert.deepEqual(await storage.blobs.listFolders(), ['backups']);
    });

    it('keeps storage bounded over days of steady use', async () => {
      for (let hour = 0; hour < 72; hour += 1) {
        clock.now = T0 + 100 * HOUR + hour * HOUR;
        await storage.results.save(Buffer.from(`image of hour ${hour}`));
        await storage.sweeper.sweepOnce();
        const folders = (await storage.blobs.listFolders()).filter((f) => f !== 'backups');
        assert.ok(folders.length <= 25, `${folders.length} folders at hour ${hour}`);
      }
      if (opened.dataDir !== undefined) {
        const names = await readdir(path.join(opened.dataDir, 'images'));
        assert.ok(names.length <= 26, names.join());
      }
    });

    it('sweeps at once when started, then every interval, until stopped', async (t) => {
      t.mock.timers.enable({ apis: ['setInterval'] });
      let sweepsStarted = 0;
      const watched: Pick<BlobStore, 'listFolders' | 'deleteFolder'> = {
        listFolders: () => {
          sweepsStarted += 1;
          return storage.blobs.listFolders();
        },
        deleteFolder: (folder) => storage.blobs.deleteFolder(folder),
      };
      clock.now = T0 + 200 * HOUR;
      const goneAtStart = await storage.results.save(Buffer.from('gone at start'));
      clock.now = T0 + 226 * HOUR;
      const later = await storage.results.save(Buffer.from('gone at an interval'));
      const sweeper = new Sweeper(watched as BlobStore, { intervalMs: 20, now: () => clock.now });

      sweeper.start();
      assert.equal(sweepsStarted, 1, 'start sweeps at once');
      await sweeper.sweepOnce(); // joins the sweep in progress
      assert.equal(sweepsStarted, 1);
      assert.equal(await storage.blobs.head(keyOfUrl(goneAtStart)), undefined);
      assert.deepEqual(await storage.blobs.head(keyOfUrl(later)), { size: 19 });

      clock.now = T0 + 252 * HOUR;
      t.mock.timers.tick(19);
      assert.equal(sweepsStarted, 1);
      t.mock.timers.tick(1);
      assert.equal(sweepsStarted, 2, 'the interval sweeps again');
      await sweeper.stop(); // waits for the sweep in progress
      assert.equal(await storage.blobs.head(keyOfUrl(later)), undefined);
      t.mock.timers.tick(1000);
      assert.equal(sweepsStarted, 2, 'a stopped sweeper sweeps no more');
    });
  });
}

describe('sweeper failures', () => {
  it('takes a Fastify (pino) logger as its log', async () => {
    const app = Fastify({ logger: false });
    const log: Log = app.log;
    assert.equal(typeof log.warn, 'function');
    await app.close();
  });

  it('sweeps on an unref timer, which never keeps the process alive', async () => {
    const idle: Pick<BlobStore, 'listFolders' | 'deleteFolder'> = {
      listFolders: async () => [],
      deleteFolder: async () => 0,
    };
    const before = activeTimeouts();
    const sweeper = new Sweeper(idle as BlobStore, { intervalMs: HOUR });
    sweeper.start();
    try {
      assert.equal(activeTimeouts(), before);
    } finally {
      await sweeper.stop();
    }
  });

  it('logs a failed sweep and tries again at the next interval', async (t) => {
    t.mock.timers.enable({ apis: ['setInterval'] });
    let calls = 0;
    const flaky: Pick<BlobStore, 'listFolders' | 'deleteFolder'> = {
      listFolders: async () => {
        calls += 1;
        if (calls === 1) throw new Error('backend down');
        return [];
      },
      deleteFolder: async () => 0,
    };
    const warnings: string[] = [];
    let warned = () => {};
    const firstWarning = new Promise<void>((resolve) => (warned = resolve));
    const log: Log = {
      ...silentLog,
      warn: (_details, message) => {
        warnings.push(message);
        warned();
      },
    };
    const sweeper = new Sweeper(flaky as BlobStore, { intervalMs: 15 });
    sweeper.start(log);
    try {
      await firstWarning;
      assert.equal(calls, 1);
      t.mock.timers.tick(15);
      assert.equal(calls, 2);
      assert.equal(warnings.length, 1);
      assert.match(warnings[0] ?? '', /sweep failed/);
    } finally {
      await sweeper.stop();
    }
    assert.equal(warnings.length, 1, 'the retry succeeded');
  });

  it('does not start a sweep while the last one is still running', async (t) => {
    t.mock.timers.enable({ apis: ['setInterval'] });
    let calls = 0;
    let finish = () => {};
    const slow: Pick<BlobStore, 'listFolders' | 'deleteFolder'> = {
      listFolders: () => {
        calls += 1;
        return new Promise<string[]>((resolve) => (finish = () => resolve([])));
      },
      deleteFolder: async () => 0,
    };
    const sweeper = new Sweeper(slow as BlobStore, { intervalMs: 10 });
    sweeper.start();
    t.mock.timers.tick(50);
    assert.equal(calls, 1);
    finish();
    await sweeper.stop();
  });

  it('does not start a timer when the interval is 0', async (t) => {
    t.mock.timers.enable({ apis: ['setInterval'] });
    let calls = 0;
    const store = { listFolders: async () => ((calls += 1), []) } as unknown as BlobStore;
    const sweeper = new Sweeper(store, { intervalMs: 0 });
    sweeper.start();
    t.mock.timers.tick(HOUR);
    assert.equal(calls, 0);
    await sweeper.sweepOnce();
    assert.equal(calls, 1);
    await sweeper.stop();
  });
});
