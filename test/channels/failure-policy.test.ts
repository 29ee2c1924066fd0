// The router's policy for each way an attempt can fail: what the breaker and the channel's health
// learn, and whether another channel is tried.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AttemptFailure, FailureKind } from '../../src/channels/attempt-result.js';
import { policyFor } from '../../src/channels/failure-policy.js';
import { GatewayError } from '../../src/errors/gateway-error.js';

function failure(kind: FailureKind, extra: Partial<AttemptFailure> = {}): AttemptFailure {
  return Object.assign(
    { kind, category: 'upstream-error' as const, mayHaveBeenAccepted: false, detail: kind },
    extra,
  );
}

const CHANNEL_FAULTS: FailureKind[] = [
  'unreachable',
  'timeout',
  'dropped',
  'throttled',
  'server-error',
  'error-body',
  'malformed',
  'task-failed',
  'task-unknown',
];

describe('the failure policy', () => {
  it("counts a channel's own faults against it and fails over unless the upstream may have the work", () => {
    for (const kind of CHANNEL_FAULTS) {
      const policy = policyFor(failure(kind), false);
      assert.equal(policy.breaker, 'failed', kind);
      assert.equal(policy.health, 'failed', kind);
      assert.equal(policy.then, 'next-unless-accepted', kind);
    }
  });

  it("answers the upstream's refusal of the request itself, the channel counted as working", () => {
    const refusal = failure('rejected', {
      callerError: new GatewayError('DataInspectionFailed', 'input: refused'),
    });
    assert.deepEqual(policyFor(refusal, false), { breaker: 'succeeded', then: 'answer-refusal' });
    // A refusal with nothing to tell the caller is judged as a fault of the channel.
    assert.equal(policyFor(failure('rejected'), false).then, 'next-unless-accepted');
  });

  it("never holds the gateway's own overload or a departed caller against the channel", () => {
    const busy = policyFor(failure('overloaded'), false);
    assert.equal(busy.breaker, 'released');
    assert.equal(busy.health, undefined);
    assert.equal(busy.gatewayOverloaded, true);
    assert.equal(busy.then, 'next');
    const gone = policyFor(failure('caller-gone'), true);
    assert.deepEqual(gone, { breaker: 'released', then: 'stop' });
    // A "caller gone" whose caller is still there is a fault of the channel.
    assert.equal(policyFor(failure('caller-gone'), false).breaker, 'failed');
  });

  it('takes a channel whose key is rejected out of service and tries the next', () => {
    const policy = policyFor(failure('key-rejected'), false);
    assert.equal(policy.health, 'taken-out');
    assert.equal(policy.noteCategory, 'unavailable');
    assert.equal(policy.then, 'next');
  });
});
