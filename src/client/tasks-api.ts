import { setTimeout as sleep } from 'node:timers/promises';
import { errorFromBody } from './answer-error.js';
import { type DashScopeAnswer, imagesOf } from './dashscope-generation.js';
import type { GatewayClient } from './gateway-client.js';
import type { GenerationOutcome } from './image-request.js';

/** `GET /api/v1/tasks/{id}` (docs/api.md §11.2). */
export interface TaskAnswer extends DashScopeAnswer {
  output: DashScopeAnswer['output'] & {
    task_id: string;
    task_status: string;
    submit_time?: string;
    scheduled_time?: string;
    end_time?: string;
    code?: string;
    message?: string;
  };
}

/** One row of `GET /api/v1/tasks` (docs/api.md §11.4). */
export interface TaskListing {
  total: number;
  total_page: number;
  page_no: number;
  page_size: number;
  data: {
    task_id: string;
    status: string;
    model_name: string;
    request_id: string;
    submit_time: string;
    scheduled_time?: string;
    end_time?: string;
  }[];
}

/** States after which a task no longer changes. */
export const FINAL_STATES = new Set(['SUCCEEDED', 'FAILED', 'CANCELED']);

export function taskPath(client: GatewayClient, taskId: string): string {
  return `${client.paths.tasks}/${encodeURIComponent(taskId)}`;
}

export async function getTask(
  client: GatewayClient,
  taskId: string,
  signal?: AbortSignal,
): Promise<TaskAnswer> {
  return (await client.json<TaskAnswer>(taskPath(client, taskId), { signal })).body;
}

export async function cancelTask(client: GatewayClient, taskId: string): Promise<TaskAnswer> {
  return (await client.json<TaskAnswer>(`${taskPath(client, taskId)}/cancel`, { method: 'POST' }))
    .body;
}

export async function listTasks(
  client: GatewayClient,
  query: Record<string, string>,
): Promise<TaskListing> {
  const search = new URLSearchParams(query).toString();
  const path = search === '' ? client.paths.tasks : `${client.paths.tasks}?${search}`;
  return (await client.json<TaskListing>(path)).body;
}

const FIRST_POLL_MS = 250;
const LONGEST_POLL_MS = 2000;

/**
 * Polls a task until it ends, telling `onState` each state it sees; answers the outcome of a
 * SUCCEEDED task and throws the task's own error for a FAILED or CANCELED one.
 */
export async function waitForTask(
  client: GatewayClient,
  taskId: string,
  submissionId: string,
  onState: (state: string) => void,
  signal?: AbortSignal,
): Promise<GenerationOutcome> {
  let wait = FIRST_POLL_MS;
  for (;;) {
    const task = await getTask(client, taskId, signal);
    const state = task.output.task_status;
    onState(state);
    if (state === 'SUCCEEDED')
      return { requestId: submissionId, taskId, images: imagesOf(task), usage: task.usage ?? {} };
    if (FINAL_STATES.has(state))
      throw errorFromBody(
        {
          code: task.output.code ?? state,
          message: task.output.message ?? `task ${taskId} ended ${state}`,
        },
        0,
        submissionId,
      );
    await sleep(wait, undefined, { signal });
    wait = Math.min(LONGEST_POLL_MS, Math.round(wait * 1.5));
  }
}
