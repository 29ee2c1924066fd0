import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CircuitBreaker } from '../../src/channels/circuit-breaker.js';

describe('the circuit breaker', () => {
  const setup = () => {
    const clock = { now: 1_000_000 };
    const breaker = new CircuitBreaker(
      { failureThreshold: 3, cooldownMs: 10_000 },
      () => clock.now,
    );
    return { clock, breaker };
  };

  it('opens after consecutive failures, not after failures a success interrupted', () => {
    const { breaker } = setup();
    breaker.failed();
    breaker.failed();
    breaker.succeeded();
    breaker.failed();
    breaker.failed();
    assert.equal(breaker.state(), 'closed');
    assert.equal(breaker.tryAcquire(), true);
    breaker.failed();
    assert.equal(breaker.state(), 'open');
    assert.equal(breaker.tryAcquire(), false);
  });

  it('half-opens after the cool-down with one trial at a time, and closes on its success', () => {
    const { clock, breaker } = setup();
    for (let i = 0; i < 3; i++) breaker.failed();
    assert.equal(breaker.reopensAt(), clock.now + 10_000);
    clock.now += 9_999;
    assert.equal(breaker.tryAcquire(), false);
    clock.now += 1;
    assert.equal(breaker.state(), 'half-open');
    assert.equal(breaker.tryAcquire(), true, 'the trial');
    assert.equal(breaker.tryAcquire(), false, 'only one trial at a time');
    breaker.succeeded();
    assert.equal(breaker.state(), 'closed');
    assert.equal(breaker.failures(), 0);
  });

  it('reopens for another cool-down when the trial fails, and frees the trial when released', () => {
    const { clock, breaker } = setup();
    for (let i = 0; i < 3; i++) breaker.failed();
    clock.now += 10_000;
    assert.equal(breaker.tryAcquire(), true);
    breaker.released();
    assert.equal(breaker.tryAcquire(), true, 'a released trial lets the next one through');
    breaker.failed();
    assert.equal(breaker.state(), 'open');
    clock.now += 9_000;
    assert.equal(breaker.state(), 'open');
    clock.now += 1_000;
    assert.equal(breaker.state(), 'half-open');
  });
});
