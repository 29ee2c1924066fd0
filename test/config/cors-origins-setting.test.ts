import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config/load-config.js';

function problemOf(value: string): string | undefined {
  try {
    loadConfig({ IMAGEGATE_CORS_ORIGINS: value });
  } catch (error) {
    if (error instanceof ConfigError) return error.problems.join('\n');
    throw error;
  }
  assert.fail(`expected ${value} to be refused`);
}

describe('IMAGEGATE_CORS_ORIGINS', () => {
  it('is off by default and when empty', () => {
    assert.deepEqual(loadConfig({}).corsOrigins, []);
    assert.deepEqual(loadConfig({ IMAGEGATE_CORS_ORIGINS: ' , ' }).corsOrigins, []);
  });

  it('keeps origins as browsers send them: lowercase host, no default port, no trailing slash', () => {
    assert.deepEqual(
      loadConfig({
        IMAGEGATE_CORS_ORIGINS:
          'https://App.Example.com/, http://localhost:5173, https://app.example.com:443',
      }).corsOrigins,
      ['https://app.example.com', 'http://localhost:5173'],
    );
    assert.deepEqual(loadConfig({ IMAGEGATE_CORS_ORIGINS: '*' }).corsOrigins, ['*']);
  });

  it('reads a list from the config file', async (t) => {
    const directory = await mkdtemp(path.join(tmpdir(), 'imagegate-cors-'));
    t.after(() => rm(directory, { recursive: true, force: true }));
    const file = path.join(directory, 'gw.yaml');
    await writeFile(file, 'cors_origins:\n  - https://a.example\n  - https://b.example:8443\n');
    assert.deepEqual(loadConfig({ IMAGEGATE_CONFIG: file }).corsOrigins, [
      'https://a.example',
      'https://b.example:8443',
    ]);
  });

  it('refuses * beside origins, paths, credentials, queries and other schemes, naming the entry', () => {
    assert.equal(
      problemOf('*, https://a.example'),
      'IMAGEGATE_CORS_ORIGINS must be * alone, or a list of origins without *',
    );
    for (const entry of [
      'https://a.example/app',
      'https://user:pw@a.example',
      'https://a.example?x=1',
      'ftp://a.example',
      'a.example',
      'null',
    ])
      assert.equal(
        problemOf(`https://ok.example,${entry}`),
        `IMAGEGATE_CORS_ORIGINS must list origins such as https://app.example.com (scheme, host and port only), got "${entry}"`,
        entry,
      );
  });
});
