import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { PassThrough } from 'node:stream';
import { it } from 'node:test';
import type { FastifyReply } from 'fastify';
import type { UnbilledGeneration } from '../../src/generation/generation-service.js';
import { endOfBodyAnswer } from '../../src/http/body-hand-over.js';
import { emptyOutcome, type GenerationOutcome } from '../../src/ledger/generation-outcome.js';

/** A response as Node leaves it: the flags it reads, and the events it emits. */
class FakeResponse extends EventEmitter {
  closed = false;
  destroyed = false;
  writableFinished = false;
}

/** An unbilled generation that says which of its two ends was called. */
function unbilled(calls: string[]): UnbilledGeneration {
  const outcome: GenerationOutcome = emptyOutcome(undefined);
  return {
    ok: true,
    result: { imageUrls: ['u'], width: 1, height: 1, tokens: { input: 0, output: 0 } },
    outcome,
    billHandedOver: async () => {
      calls.push('billed');
      return outcome;
    },
    release: async () => {
      calls.push('released');
      return outcome;
    },
  };
}

function ending(response: FakeResponse, calls: string[]) {
  const reply = { raw: response, log: { warn: () => undefined } } as unknown as FastifyReply;
  const image = new PassThrough();
  return { image, ended: endOfBodyAnswer(reply, [image], unbilled(calls)) };
}

it('bills a base64 answer its connection took whole (finish, then close), and closes its images', async () => {
  const response = new FakeResponse();
  const calls: string[] = [];
  const { image, ended } = ending(response, calls);
  response.writableFinished = true;
  response.emit('finish');
  response.closed = true;
  response.emit('close');
  await ended;
  assert.deepEqual(calls, ['billed']);
  assert.ok(image.destroyed);
});

it('bills nothing for an answer whose socket was destroyed before it confirmed the write (writableFinished true, no finish)', async () => {
  // Node reads writableFinished as true once the answer left the response and its socket holds
  // nothing more, which a destroyed socket does not; 'finish' waits for the write's callback.
  const response = new FakeResponse();
  const calls: string[] = [];
  const { ended } = ending(response, calls);
  response.writableFinished = true;
  response.closed = true;
  response.destroyed = true;
  response.emit('close');
  await ended;
  assert.deepEqual(calls, ['released']);
});

it('bills nothing for an answer whose caller left before it was sent', async () => {
  const response = new FakeResponse();
  response.closed = true;
  response.destroyed = true;
  const calls: string[] = [];
  await ending(response, calls).ended;
  assert.deepEqual(calls, ['released']);
});
