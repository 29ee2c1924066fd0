// A gateway process killed (SIGKILL) while it re-hosts images into its segment files: every image
// it answered before is served, byte for byte, by the process that takes its place on the same
// data directory, which writes new images to segments of its own.
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { describe, it } from 'node:test';
import { MODEL_A } from '../../src/domain/models.js';
import { startFakeDashScope } from '../fixtures/fake-dashscope.js';
import {
  dashScopeChannelEnv,
  eventually,
  generate,
  generationBody,
  nodeEnv,
  openBooks,
  restartableNode,
} from './fault-rig.js';

const ANSWERED = 24;
const CUT_SHORT = 24;
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

async function download(url: string): Promise<{ status: number; bytes: Buffer }> {
  const response = await fetch(url);
  return { status: response.status, bytes: Buffer.from(await response.arrayBuffer()) };
}

async function segmentsUnder(dataDir: string): Promise<string[]> {
  const images = path.join(dataDir, 'images');
  const found: string[] = [];
  for (const folder of await readdir(images))
    for (const name of await readdir(path.join(images, folder)))
      if (name.startsWith('.segment-')) found.push(`${folder}/${name}`);
  return found.sort();
}

describe('a gateway process killed (SIGKILL) while storing images', () => {
  it('leaves every image it answered servable by the next process, byte for byte', async (t) => {
    const node = await restartableNode(t);
    const directory = node.directory;
    const books = await openBooks(t, {
      kind: 'sqlite',
      file: path.join(directory, 'imagegate.db'),
    });
    const fake = await startFakeDashScope();
    t.after(() => fake.close());
    const env = nodeEnv(books, await dashScopeChannelEnv(t, fake));
    const start = () => node.start(env);
    const { authorization } = await books.token();
    const ask = (url: string, index: number, prefix: string) =>
      generate(url, {
        authorization,
        body: generationBody(MODEL_A, 1, `picture ${index}`),
        requestId: `${prefix}-${index}`,
      });

    const first = await start();
    const answered = await Promise.all(
      Array.from({ length: ANSWERED }, (_, index) => ask(first.url, index, 'answered')),
    );
    const urls = answered.flatMap((outcome) => {
      assert.equal(outcome.status, 200, outcome.requestId);
      return outcome.imageUrls;
    });
    assert.equal(urls.length, ANSWERED);
    const served = new Map<string, Buffer>();
    for (const url of urls) {
      const { status, bytes } = await download(url);
      assert.equal(status, 200);
      assert.deepEqual(bytes.subarray(0, 8), PNG_SIGNATURE);
      served.set(url, bytes);
    }
    const segmentsBefore = await segmentsUnder(directory);
    assert.ok(segmentsBefore.length >= 1, 'the images went into segments');

    // More images, their downloads finishing one after another over half a second: half are
    // answered, the rest on their way into the segment, when the process dies.
    fake.script(
      ...Array.from({ length: CUT_SHORT }, (_, index) => ({
        kind: 'succeed' as const,
        downloadDelayMs: index * 20,
      })),
    );
    let answeredSoFar = 0;
    const cutShort = Array.from({ length: CUT_SHORT }, (_, index) =>
      ask(first.url, index, 'cut-short').finally(() => {
        answeredSoFar += 1;
      }),
    );
    await eventually(() => answeredSoFar >= CUT_SHORT / 2, 30_000, 'half of them answered');
    first.child.kill('SIGKILL');
    await first.exited;
    // Those answered before the kill must be served later like the others.
    const answeredBeforeKill = (await Promise.all(cutShort)).flatMap((outcome) =>
      outcome.status === 200 ? outcome.imageUrls : [],
    );

    const second = await start();
    for (const [url, bytes] of served) {
      const after = await download(url.replace(first.url, second.url));
      assert.equal(after.status, 200, url);
      assert.deepEqual(after.bytes, bytes, url);
    }
    for (const url of answeredBeforeKill) {
      const after = await download(url.replace(first.url, second.url));
      assert.equal(after.status, 200, url);
      assert.deepEqual(after.bytes.subarray(0, 8), PNG_SIGNATURE, url);
    }
    const fresh = await ask(second.url, 0, 'after-restart');
    assert.equal(fresh.status, 200);
    const [freshUrl] = fresh.imageUrls;
    assert.ok(freshUrl);
    assert.equal((await download(freshUrl)).status, 200);
    const segmentsAfter = await segmentsUnder(directory);
    assert.ok(
      segmentsAfter.some((segment) => !segmentsBefore.includes(segment)),
      'the new process writes a segment of its own',
    );
  });
});
