import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type KeyedSource, TtlCache } from '../../src/support/ttl-cache.js';

/** A source that answers `<key>@<n>` on its n-th read of a key, or undefined for `missing`. */
function countingSource(): KeyedSource<string | undefined> & { reads: string[] } {
  const reads: string[] = [];
  return {
    reads,
    async find(key) {
      reads.push(key);
      if (key === 'missing') return undefined;
      return `${key}@${reads.filter((read) => read === key).length}`;
    },
  };
}

describe('TtlCache', () => {
  it('remembers an answer for ttlMs of the injected clock, then reads the source again', async () => {
    // A fake clock at 0: lru-cache would read a start time of 0 as "never expires".
    let now = 0;
    const source = countingSource();
    const cache = new TtlCache(source, 1000, () => now);
    assert.equal(await cache.find('a'), 'a@1');
    now = 999;
    assert.equal(await cache.find('a'), 'a@1');
    now = 1001;
    assert.equal(await cache.find('a'), 'a@2');
    now = 2000;
    assert.equal(await cache.find('a'), 'a@2');
    assert.deepEqual(source.reads, ['a', 'a']);
  });

  it('peeks at what it remembers, at once and under the same time limit, never asking the source', async () => {
    let now = 1;
    const source = countingSource();
    const cache = new TtlCache(source, 1000, () => now);
    assert.equal(cache.peek('a'), undefined);
    assert.equal(await cache.find('a'), 'a@1');
    assert.deepEqual(cache.peek('a'), { value: 'a@1' });
    await cache.find('missing');
    assert.deepEqual(cache.peek('missing'), { value: undefined });
    now = 1002;
    assert.equal(cache.peek('a'), undefined);
    assert.deepEqual(source.reads, ['a', 'missing']);
    assert.equal(new TtlCache(source, 0, () => now).peek('a'), undefined);
  });

  it('remembers that a key has no answer', async () => {
    const source = countingSource();
    const cache = new TtlCache(source, 1000, () => 5_000);
    assert.equal(await cache.find('missing'), undefined);
    assert.equal(await cache.find('missing'), undefined);
    assert.deepEqual(source.reads, ['missing']);
  });

  it('remembers nothing when ttlMs is 0', async () => {
    const source = countingSource();
    const cache = new TtlCache(source, 0, () => 5_000);
    assert.equal(await cache.find('a'), 'a@1');
    assert.equal(await cache.find('a'), 'a@2');
    assert.equal(await cache.find('missing'), undefined);
    assert.equal(await cache.find('missing'), undefined);
    assert.deepEqual(source.reads, ['a', 'a', 'missing', 'missing']);
  });

  it('reads the source again for a key it was told to forget, and only that key', async () => {
    const source = countingSource();
    const cache = new TtlCache(source, 60_000, () => 5_000);
    await cache.find('a');
    await cache.find('b');
    cache.forget('a');
    assert.equal(await cache.find('a'), 'a@2');
    assert.equal(await cache.find('b'), 'b@1');
  });

  it('holds at most maxEntries keys, dropping the least recently used', async () => {
    const source = countingSource();
    const cache = new TtlCache(source, 60_000, () => 5_000, 2);
    await cache.find('a');
    await cache.find('b');
    await cache.find('a');
    await cache.find('c');
    assert.equal(await cache.find('a'), 'a@1');
    assert.equal(await cache.find('b'), 'b@2', 'b was the least recently used');
  });

  it('does not remember a failed read', async () => {
    let fail = true;
    const cache = new TtlCache<string>(
      {
        find: async (key) => {
          if (fail) throw new Error('database down');
          return key;
        },
      },
      60_000,
      () => 5_000,
    );
    await assert.rejects(cache.find('a'), /database down/);
    fail = false;
    assert.equal(await cache.find('a'), 'a');
  });
});
