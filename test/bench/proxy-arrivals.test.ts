import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { arrivalSpread } from '../../bench/proxy-arrivals.js';

describe("the crowd's first wave at the upstream", () => {
  it('takes the median and the 99th percentile of the arrivals after the first, by nearest rank', () => {
    // 0, 1, ..., 999 ms after the first, in any order.
    const afterFirst = Array.from({ length: 1000 }, (_, index) => (index * 7919) % 1000);
    assert.deepEqual(arrivalSpread(afterFirst, 1000), { p50Ms: 499, p99Ms: 989 });
  });

  it('reads only the wave it expects, in arrival order', () => {
    const wave = Array.from({ length: 100 }, (_, index) => index / 10);
    // A second wave, 2 s later, is not the first wave's tail.
    const twoWaves = [...wave, ...wave.map((at) => at + 2000)];
    assert.deepEqual(arrivalSpread(twoWaves, 100), { p50Ms: 4.9, p99Ms: 9.8 });
  });

  it('has no spread for a wave cut short or for nothing expected', () => {
    assert.equal(arrivalSpread([0, 1, 2], 4), undefined);
    assert.equal(arrivalSpread([], 0), undefined);
  });
});
