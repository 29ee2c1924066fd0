import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { weightedOrder } from '../../src/channels/weighted-order.js';
import { seededRandom } from './channel-fixtures.js';

describe('weighted order', () => {
  it('tries lower priority tiers first whatever the weights', () => {
    const random = seededRandom(1);
    const items = [
      { name: 'late', priority: 2, weight: 1000 },
      { name: 'early', priority: 0, weight: 1 },
      { name: 'middle', priority: 1, weight: 1 },
    ];
    for (let i = 0; i < 50; i++)
      assert.deepEqual(
        weightedOrder(items, random).map((item) => item.name),
        ['early', 'middle', 'late'],
      );
  });

  it('picks first within a tier in proportion to weight (within 4 standard deviations over 20,000 draws)', () => {
    const random = seededRandom(7);
    const items = [
      { name: 'a', priority: 0, weight: 1 },
      { name: 'b', priority: 0, weight: 3 },
      { name: 'c', priority: 0, weight: 6 },
    ];
    const draws = 20_000;
    const firsts = new Map<string, number>();
    for (let i = 0; i < draws; i++) {
      const first = weightedOrder(items, random)[0]?.name ?? '';
      firsts.set(first, (firsts.get(first) ?? 0) + 1);
    }
    for (const item of items) {
      const p = item.weight / 10;
      const sd = Math.sqrt(draws * p * (1 - p));
      const seen = firsts.get(item.name) ?? 0;
      assert.ok(Math.abs(seen - draws * p) < 4 * sd, `${item.name}: ${seen} vs ${draws * p}`);
    }
  });

  it('keeps every item exactly once', () => {
    const items = Array.from({ length: 6 }, (_, index) => ({
      name: String(index),
      priority: index % 2,
      weight: index + 1,
    }));
    const order = weightedOrder(items, seededRandom(3));
    assert.deepEqual(order.map((item) => item.name).sort(), items.map((item) => item.name).sort());
  });
});
