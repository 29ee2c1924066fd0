import type { FastifyReply, FastifyRequest } from 'fastify';
import type { GenerationRequest } from '../../domain/generation-request.js';
import { invalidParameter } from '../../errors/gateway-error.js';
import type { HeldSubmission, TaskService } from '../../tasks/task-service.js';
import { principalOf } from '../hooks/authentication.js';
import { answeringReplay } from '../hooks/idempotency.js';
import { followOutcome, recordOutcome, rowLabelsOf } from '../hooks/ledger.js';
import { describe, emptyOutcome } from '../../ledger/generation-outcome.js';
import { resolvesUploads } from '../upload-headers.js';
import { answerFinished, watchFinish } from '../answer-finished.js';
import { whenClosed } from '../when-closed.js';

/** The answer to a task submission (docs/api.md §11.1). */
export interface TaskReceipt {
  output: { task_id: string; task_status: 'PENDING' };
  request_id: string;
}

/**
 * A validated generation request sent with `X-DashScope-Async: enable`: admitted as a synchronous
 * request is, stored as a PENDING task, answered at once with its id. A repeat under the same
 * Idempotency-Key gets the same task's id.
 */
export async function submitTask(
  tasks: TaskService,
  request: FastifyRequest,
  reply: FastifyReply,
  generationRequest: GenerationRequest,
): Promise<TaskReceipt> {
  const description = describe(generationRequest);
  const replay = request.idempotentReplay;
  if (replay !== undefined) {
    const taskId = taskIdOf(replay.result);
    if (taskId === undefined)
      throw invalidParameter('Idempotency-Key', 'was used for a synchronous request');
    recordOutcome(request, Object.assign(emptyOutcome(description), { replayed: true }));
    answeringReplay(reply);
    return receipt(taskId, request.id);
  }
  const submitting = tasks.submit({
    body: request.body,
    request: generationRequest,
    requestId: request.id,
    principal: principalOf(request),
    labels: rowLabelsOf(request),
    claim: request.idempotencyClaim?.fence,
    resolveUploads: resolvesUploads(request.headers),
    callerGone: () => reply.raw.closed || reply.raw.destroyed,
  });
  // Stored, the task writes its own row when it ends; refused, the request's end writes it.
  followOutcome(
    request,
    submitting.then(
      () => Object.assign(emptyOutcome(description), { recorded: 'task' as const }),
      () => emptyOutcome(description),
    ),
  );
  const held = await submitting;
  handOverWhenAnswered(reply, held);
  await afterOnePoll();
  return receipt(held.taskId, request.id);
}

/**
 * Resolves after the event loop has polled for I/O once more. A caller whose close reached the
 * gateway while the submission ran in one stretch of work (SQLite's statements are synchronous)
 * is seen gone then, and its task withdrawn, instead of its receipt being written to a dead
 * connection that still takes it ('finish'), which would let the task run and bill.
 */
function afterOnePoll(): Promise<void> {
  return new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
}

/**
 * The task may run once the answer carrying its id has been handed to the caller's connection
 * ('finish'); a connection that closes before that, or an answer that is not the receipt,
 * withdraws it unbilled.
 */
export function handOverWhenAnswered(reply: FastifyReply, held: HeldSubmission): void {
  const response = reply.raw;
  watchFinish(response);
  response.once('finish', () => {
    void (response.statusCode === 200 ? held.handedOver() : held.withdrawn());
  });
  whenClosed(reply, () => {
    if (!answerFinished(response)) void held.withdrawn();
  });
}

function receipt(taskId: string, requestId: string): TaskReceipt {
  return { output: { task_id: taskId, task_status: 'PENDING' }, request_id: requestId };
}

/** The task id a submission published under its Idempotency-Key. */
function taskIdOf(published: unknown): string | undefined {
  if (typeof published !== 'object' || published === null || !('task_id' in published))
    return undefined;
  const { task_id: taskId } = published;
  return typeof taskId === 'string' ? taskId : undefined;
}
