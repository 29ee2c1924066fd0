import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  ExternalMemoryRelease,
  majorCollection,
} from '../../src/support/external-memory-release.js';

const MB = 1024 * 1024;

/** A release over readings the test sets, whose collections drop the reading to `collectsTo`. */
function releaseOver(start: number, collectsTo: number) {
  let external = start;
  let collections = 0;
  const release = new ExternalMemoryRelease(
    () => external,
    async () => {
      collections++;
      external = collectsTo;
    },
    64 * MB,
  );
  return {
    release,
    set: (bytes: number) => {
      external = bytes;
    },
    collections: () => collections,
  };
}

describe('releasing external memory after a burst', () => {
  it('collects once the memory has grown past the slack and stopped growing, and not again while it stays', async () => {
    const memory = releaseOver(10 * MB, 12 * MB);
    memory.set(300 * MB);
    assert.equal(await memory.release.check(), false, 'still growing');
    memory.set(500 * MB);
    assert.equal(await memory.release.check(), false, 'still growing');
    assert.equal(await memory.release.check(), true, 'stopped growing');
    assert.equal(memory.collections(), 1);
    assert.equal(await memory.release.check(), false);
    assert.equal(memory.collections(), 1);
  });

  it('leaves growth within the slack alone', async () => {
    const memory = releaseOver(10 * MB, 10 * MB);
    memory.set(60 * MB);
    await memory.release.check();
    assert.equal(await memory.release.check(), false);
    assert.equal(memory.collections(), 0);
  });

  it("counts from the level V8's own collections brought it down to", async () => {
    const memory = releaseOver(200 * MB, 20 * MB);
    memory.set(20 * MB);
    assert.equal(await memory.release.check(), false);
    memory.set(100 * MB);
    await memory.release.check();
    assert.equal(await memory.release.check(), true, '80 MB above the lowest level seen');
  });

  it('collects what is still in memory after a collection when the work holding it goes on', async () => {
    // Live bodies: the collection frees nothing, and the level after it is the new start.
    const memory = releaseOver(10 * MB, 400 * MB);
    memory.set(400 * MB);
    await memory.release.check();
    assert.equal(await memory.release.check(), true);
    assert.equal(await memory.release.check(), false);
    assert.equal(await memory.release.check(), false);
    assert.equal(memory.collections(), 1);
  });

  it("V8's major collection frees an external string nothing refers to", async () => {
    const collect = majorCollection();
    await collect();
    const before = process.memoryUsage().external;
    // Kept until the end: a Buffer's memory is freed after the collection, in the background.
    const bytes = Buffer.alloc(64 * MB, 'a');
    const externalWhileHeld = () => {
      const text = bytes.toString('latin1');
      assert.equal(text.length, bytes.length);
      return process.memoryUsage().external;
    };
    const held = externalWhileHeld();
    assert.ok(held >= before + 120 * MB, `the string is external: ${held} bytes, ${before} before`);
    await collect();
    const after = process.memoryUsage().external;
    assert.ok(after < before + 72 * MB, `external ${after} bytes, ${before} before`);
    assert.equal(bytes.length, 64 * MB);
    assert.equal(typeof (globalThis as { gc?: unknown }).gc, 'undefined', 'gc stays unexposed');
  });
});
