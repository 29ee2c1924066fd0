import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { warnAtMostEvery } from '../../src/support/log.js';

describe('warnAtMostEvery', () => {
  it('says the first warning, then nothing more until the interval has passed', () => {
    let now = 1_000;
    const said: string[] = [];
    const warn = warnAtMostEvery(
      { info: () => {}, warn: (_fields, message) => said.push(message), error: () => {} },
      10_000,
      () => now,
    );
    warn({}, 'first');
    now += 9_999;
    warn({}, 'too soon');
    now += 1;
    warn({}, 'again');
    warn({}, 'too soon again');
    assert.deepEqual(said, ['first', 'again']);
  });

  it('says the first warning even on a clock that starts at zero', () => {
    const said: string[] = [];
    const warn = warnAtMostEvery(
      { info: () => {}, warn: (_fields, message) => said.push(message), error: () => {} },
      60_000,
      () => 0,
    );
    warn({}, 'at once');
    assert.deepEqual(said, ['at once']);
  });
});
