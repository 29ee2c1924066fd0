import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PerKeySlots } from '../../src/support/per-key-slots.js';

describe('PerKeySlots', () => {
  it('gives each key its own slots, and keeps no key without a holder', () => {
    const slots = new PerKeySlots(2);
    const a1 = slots.tryTake('a');
    const a2 = slots.tryTake('a');
    assert.ok(a1 && a2);
    assert.equal(slots.tryTake('a'), undefined);
    const b = slots.tryTake('b');
    assert.ok(b);
    a1();
    a1();
    const a3 = slots.tryTake('a');
    assert.ok(a3, 'a released slot is free again');
    assert.equal(slots.tryTake('a'), undefined, 'a second release gave back nothing more');
    a2();
    a3();
    b();
    assert.equal(slots.keys, 0);
  });

  it('rejects a limit that is not a whole number of at least 1', () => {
    assert.throws(() => new PerKeySlots(0), RangeError);
    assert.throws(() => new PerKeySlots(1.5), RangeError);
  });
});
