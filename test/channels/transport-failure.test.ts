import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AttemptCall } from '../../src/channels/attempt-result.js';
import { transportFailure } from '../../src/channels/transport-failure.js';

/** The part of an attempt transportFailure reads: whether its caller has gone. */
function callWhose(callerGone: boolean): AttemptCall {
  return { callerGone: () => callerGone } as unknown as AttemptCall;
}

function decided(requestSent: boolean, aborted: boolean, callerGone = false) {
  const result = transportFailure(
    { kind: 'failed', requestSent, aborted, detail: 'connection reset' },
    callWhose(callerGone),
  );
  assert.equal(result.ok, false);
  return [result.failure.kind, result.failure.mayHaveBeenAccepted];
}

describe('transportFailure: what a failed exchange means for failover', () => {
  it('nothing sent: unreachable, safe to try another channel', () => {
    assert.deepEqual(decided(false, false), ['unreachable', false]);
  });

  it('sent, then the connection broke: dropped, never sent again', () => {
    assert.deepEqual(decided(true, false), ['dropped', true]);
  });

  it('time up before the request was sent: a time-out, safe to try another channel', () => {
    assert.deepEqual(decided(false, true), ['timeout', false]);
  });

  it('time up after the request was sent: a time-out, never sent again', () => {
    assert.deepEqual(decided(true, true), ['timeout', true]);
  });

  it('the caller gone: caller-gone, accepted or not as the request was sent or not', () => {
    assert.deepEqual(decided(false, true, true), ['caller-gone', false]);
    assert.deepEqual(decided(true, true, true), ['caller-gone', true]);
  });
});
