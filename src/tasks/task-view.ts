import { isModelId, MODEL_B } from '../domain/models.js';
import type { TaskRecord } from '../domain/task.js';
import type { GenerationResult } from '../generation/generation-service.js';
import { shapeResponse } from '../generation/response-shape.js';
import { formatTaskTime } from './dashscope-time.js';

/** The answer to GET /tasks/{task_id}, as DashScope's task protocol has it (docs/api.md §11). */
export interface TaskAnswer {
  request_id: string;
  output: Record<string, unknown> & { task_id: string; task_status: string };
  usage?: object;
}

/**
 * A task's status; once SUCCEEDED, the synchronous response's `output` (choices, and `finished`
 * for model A) and `usage`, built by the same code, its image URLs passed through `presentUrl`
 * when given (they name the origin of the request reading them); once FAILED, the code and
 * message a synchronous call would have got.
 */
export function taskAnswer(
  task: TaskRecord,
  requestId: string,
  presentUrl?: (url: string) => string,
): TaskAnswer {
  const output: TaskAnswer['output'] = {
    task_id: task.id,
    task_status: task.state,
    submit_time: formatTaskTime(task.submittedAt),
    ...(task.scheduledAt === undefined ? {} : { scheduled_time: formatTaskTime(task.scheduledAt) }),
    ...(task.endedAt === undefined ? {} : { end_time: formatTaskTime(task.endedAt) }),
  };
  if (task.state === 'SUCCEEDED' && task.result !== undefined) {
    const stored = JSON.parse(task.result) as GenerationResult;
    const result =
      presentUrl === undefined
        ? stored
        : Object.assign({}, stored, { imageUrls: stored.imageUrls.map(presentUrl) });
    const shaped = shapeResponse(
      { model: isModelId(task.model) ? task.model : MODEL_B },
      result,
      task.requestId,
    );
    return { request_id: requestId, output: { ...output, ...shaped.output }, usage: shaped.usage };
  }
  if (task.state === 'FAILED') {
    output.code = task.errorCode;
    output.message = task.errorMessage;
  }
  return { request_id: requestId, output };
}

/** One task in GET /tasks's `data`. */
export function taskListEntry(task: TaskRecord): Record<string, string> {
  return {
    task_id: task.id,
    status: task.state,
    model_name: task.model,
    request_id: task.requestId,
    submit_time: formatTaskTime(task.submittedAt),
    ...(task.scheduledAt === undefined ? {} : { scheduled_time: formatTaskTime(task.scheduledAt) }),
    ...(task.endedAt === undefined ? {} : { end_time: formatTaskTime(task.endedAt) }),
  };
}
