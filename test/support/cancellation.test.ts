import assert from 'node:assert/strict';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import {
  asAbortSignal,
  type Cancellation,
  CancellationSource,
} from '../../src/support/cancellation.js';

describe('CancellationSource', () => {
  it('calls each listener once, in the order added, with the reason already set', () => {
    const source = new CancellationSource();
    const calls: string[] = [];
    source.addEventListener('abort', () => calls.push(`first ${String(source.reason)}`));
    source.addEventListener('abort', () => calls.push(`second ${String(source.aborted)}`));
    source.abort('gone');
    source.abort('again');
    assert.deepEqual(calls, ['first gone', 'second true']);
    assert.equal(source.reason, 'gone');
  });

  it('skips a listener added twice, removed, or added after the abort', () => {
    const source = new CancellationSource();
    let calls = 0;
    const count = () => (calls += 1);
    const removed = () => assert.fail('a removed listener was called');
    source.addEventListener('abort', count);
    source.addEventListener('abort', count);
    source.addEventListener('abort', removed);
    source.removeEventListener('abort', removed);
    source.removeEventListener('abort', () => undefined);
    source.abort();
    source.addEventListener('abort', () => assert.fail('added after the abort'));
    assert.equal(calls, 1);
  });

  it('lets a listener remove another during the abort without skipping or repeating any', () => {
    const source = new CancellationSource();
    const calls: string[] = [];
    const second = () => calls.push('second');
    source.addEventListener('abort', () => {
      calls.push('first');
      source.removeEventListener('abort', second);
    });
    source.addEventListener('abort', second);
    source.abort();
    // As on an AbortSignal, the listeners are those present when the abort began.
    assert.deepEqual(calls, ['first', 'second']);
  });

  it('aborts with an AbortError by default, which throwIfAborted throws', () => {
    const source = new CancellationSource();
    source.throwIfAborted();
    source.abort();
    assert.ok(source.reason instanceof DOMException);
    assert.equal(source.reason.name, 'AbortError');
    assert.throws(() => source.throwIfAborted(), { name: 'AbortError' });
  });

  it('reports a listener that throws as an uncaught exception and still calls the rest', async () => {
    const source = new CancellationSource();
    const failure = new Error('listener failed');
    const listeners = process.listeners('uncaughtException');
    process.removeAllListeners('uncaughtException');
    const reported = once(process, 'uncaughtException');
    let laterCalled = false;
    try {
      source.addEventListener('abort', () => {
        throw failure;
      });
      source.addEventListener('abort', () => (laterCalled = true));
      source.abort();
      assert.equal(laterCalled, true);
      const [error] = (await reported) as [unknown];
      assert.equal(error, failure);
    } finally {
      for (const listener of listeners) process.on('uncaughtException', listener);
    }
  });

  it('is a Cancellation, as an AbortSignal is', () => {
    const follow = (cancellation: Cancellation) => cancellation.aborted;
    assert.equal(follow(new CancellationSource()), false);
    assert.equal(follow(AbortSignal.abort()), true);
  });
});

describe('asAbortSignal', () => {
  it('returns an AbortSignal as it is', () => {
    const signal = new AbortController().signal;
    assert.equal(asAbortSignal(signal), signal);
  });

  it('gives an AbortSignal that aborts with the source, and with its reason', () => {
    const source = new CancellationSource();
    const signal = asAbortSignal(source);
    assert.equal(signal.aborted, false);
    source.abort('time up');
    assert.equal(signal.aborted, true);
    assert.equal(signal.reason, 'time up');
  });

  it('gives an aborted AbortSignal for a source aborted already', () => {
    const source = new CancellationSource();
    source.abort('earlier');
    const signal = asAbortSignal(source);
    assert.equal(signal.aborted, true);
    assert.equal(signal.reason, 'earlier');
  });
});
