import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { it } from 'node:test';
import { answerFinished, watchFinish } from '../../src/http/answer-finished.js';

/** A response as Node leaves it: the flag it reads, and the events it emits. */
class FakeResponse extends EventEmitter {
  writableFinished = false;
}

const asResponse = (fake: FakeResponse) => fake as unknown as ServerResponse;

it('an answer whose finish came was handed over', () => {
  const response = new FakeResponse();
  watchFinish(asResponse(response));
  response.writableFinished = true;
  response.emit('finish');
  assert.equal(answerFinished(asResponse(response)), true);
});

it('an answer whose socket was destroyed before confirming the write was not, though writableFinished reads true', () => {
  const response = new FakeResponse();
  watchFinish(asResponse(response));
  response.writableFinished = true;
  response.emit('close');
  assert.equal(answerFinished(asResponse(response)), false);
});

it('an answer never watched is judged by writableFinished', () => {
  const response = new FakeResponse();
  response.writableFinished = true;
  assert.equal(answerFinished(asResponse(response)), true);
});
