import assert from 'node:assert/strict';
import fsPromises, { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import { loadOrCreateSecret } from '../../src/auth/secret.js';

let root: string;
beforeEach(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'imagegate-secret-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('the generated secret', () => {
  it('is made on first use, 0600, in a folder it creates, and read back the same afterwards', async () => {
    const dataDir = path.join(root, 'a', 'b');
    const secret = await loadOrCreateSecret(undefined, dataDir);
    assert.ok(secret.length >= 32);
    assert.equal((await stat(path.join(dataDir, 'secret'))).mode & 0o777, 0o600);
    assert.equal(await loadOrCreateSecret(undefined, dataDir), secret);
    assert.deepEqual(await readdir(dataDir), ['secret']);
  });

  it('is the same for every one of many starts at once, none of which reads it half-written', async () => {
    const secrets = await Promise.all(
      Array.from({ length: 64 }, () => loadOrCreateSecret(undefined, root)),
    );
    assert.equal(new Set(secrets).size, 1);
    assert.ok((secrets[0] as string).length >= 32);
    assert.deepEqual(await readdir(root), ['secret']);
  });

  it('appears under its name whole: a reader that finds the file never finds it short', async () => {
    const file = path.join(root, 'secret');
    let made = false;
    const firstSeen = async (): Promise<string> => {
      for (;;) {
        try {
          return await readFile(file, 'utf8');
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || made) throw error;
        }
      }
    };
    const readers = Array.from({ length: 4 }, firstSeen);
    const secret = await loadOrCreateSecret(undefined, root);
    made = true;
    for (const seen of await Promise.all(readers)) assert.equal(seen.trim(), secret);
  });

  it('is not made when one is configured', async () => {
    assert.equal(await loadOrCreateSecret('x'.repeat(40), root), 'x'.repeat(40));
    assert.deepEqual(await readdir(root), []);
  });

  it('refuses a file that holds too short a secret, naming the file', async () => {
    await writeFile(path.join(root, 'secret'), 'short\n');
    await assert.rejects(loadOrCreateSecret(undefined, root), (error: Error) =>
      error.message.includes(path.join(root, 'secret')),
    );
  });
});

describe('the generated secret where the folder allows no hard links', () => {
  afterEach(() => {
    mock.restoreAll();
    syncBuiltinESMExports();
  });

  function linkFailsWith(code: string): void {
    mock.method(fsPromises, 'link', async () => {
      throw Object.assign(new Error(`link: ${code}`), { code });
    });
    syncBuiltinESMExports();
  }

  it('is written in place instead, 0600, and read back the same afterwards', async () => {
    linkFailsWith('EPERM');
    const secret = await loadOrCreateSecret(undefined, root);
    assert.ok(secret.length >= 32);
    assert.equal((await stat(path.join(root, 'secret'))).mode & 0o777, 0o600);
    assert.deepEqual(await readdir(root), ['secret']);
    assert.equal(await loadOrCreateSecret(undefined, root), secret);
  });

  it('fails on any other error of the link, leaving no draft behind', async () => {
    linkFailsWith('EIO');
    await assert.rejects(loadOrCreateSecret(undefined, root), /link: EIO/);
    assert.deepEqual(await readdir(root), []);
  });
});
