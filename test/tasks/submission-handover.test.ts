import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { it } from 'node:test';
import type { FastifyReply } from 'fastify';
import { handOverWhenAnswered } from '../../src/http/routes/task-submission.js';
import type { HeldSubmission } from '../../src/tasks/task-service.js';

/** A response as Node leaves it: the flags it reads, and the events it emits. */
class FakeResponse extends EventEmitter {
  closed = false;
  destroyed = false;
  writableFinished = false;
  statusCode = 200;
}

/** How the hold of a submission ended: the calls made to it. */
function watchedHold(): { held: HeldSubmission; calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    held: {
      taskId: 'task-1',
      handedOver: async () => {
        calls.push('handedOver');
      },
      withdrawn: async () => {
        calls.push('withdrawn');
      },
    },
  };
}

function answer(response: FakeResponse, held: HeldSubmission): void {
  handOverWhenAnswered({ raw: response } as unknown as FastifyReply, held);
}

it('a receipt handed to the connection (finish, then close): the task is handed over, once', () => {
  const response = new FakeResponse();
  const { held, calls } = watchedHold();
  answer(response, held);
  response.writableFinished = true;
  response.emit('finish');
  response.closed = true;
  response.emit('close');
  assert.deepEqual(calls, ['handedOver']);
});

it('a connection that closes before the receipt: the task is withdrawn', () => {
  const response = new FakeResponse();
  const { held, calls } = watchedHold();
  answer(response, held);
  response.closed = true;
  response.destroyed = true;
  response.emit('close');
  assert.deepEqual(calls, ['withdrawn']);
});

it('a receipt written to a socket destroyed before it confirmed the write (writableFinished true, no finish): the task is withdrawn, not left held', () => {
  // Node reads writableFinished as true once the answer left the response and its socket holds
  // nothing more, which a destroyed socket does not; 'finish' waits for the write's callback.
  const response = new FakeResponse();
  const { held, calls } = watchedHold();
  answer(response, held);
  response.writableFinished = true;
  response.closed = true;
  response.destroyed = true;
  response.emit('close');
  assert.deepEqual(calls, ['withdrawn']);
});

it('an answer other than the receipt (finish with an error status): the task is withdrawn, once', () => {
  const response = new FakeResponse();
  const { held, calls } = watchedHold();
  answer(response, held);
  response.statusCode = 503;
  response.writableFinished = true;
  response.emit('finish');
  response.closed = true;
  response.emit('close');
  assert.deepEqual(calls, ['withdrawn']);
});
