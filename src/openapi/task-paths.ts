import { IMAGE_GENERATION_PATH, TASKS_PATH } from '../domain/api-paths.js';
import { TASK_STATES } from '../domain/task.js';

const TIME = {
  type: 'string',
  description: 'YYYY-MM-DD hh:mm:ss.SSS, UTC',
  examples: ['2025-01-15 19:57:47.489'],
};
const json = (schema: object) => ({ 'application/json': { schema } });

/** The schemas of the task answers (docs/api.md §11). */
export const TASK_SCHEMAS = {
  TaskReceipt: {
    type: 'object',
    required: ['output', 'request_id'],
    properties: {
      output: {
        type: 'object',
        required: ['task_id', 'task_status'],
        properties: { task_id: { type: 'string' }, task_status: { const: 'PENDING' } },
      },
      request_id: { type: 'string' },
    },
  },
  Task: {
    type: 'object',
    required: ['output', 'request_id'],
    properties: {
      output: {
        type: 'object',
        required: ['task_id', 'task_status', 'submit_time'],
        properties: {
          task_id: { type: 'string' },
          task_status: { enum: [...TASK_STATES] },
          submit_time: TIME,
          scheduled_time: TIME,
          end_time: TIME,
          choices: { type: 'array', description: 'Once SUCCEEDED: as the synchronous response.' },
          finished: { type: 'boolean', description: 'Once SUCCEEDED, model A only.' },
          code: { type: 'string', description: 'Once FAILED: the synchronous error code.' },
          message: { type: 'string', description: 'Once FAILED.' },
        },
      },
      usage: { type: 'object', description: 'Once SUCCEEDED: as the synchronous response.' },
      request_id: { type: 'string' },
    },
  },
  TaskList: {
    type: 'object',
    properties: {
      request_id: { type: 'string' },
      data: {
        type: 'array',
        items: {
          type: 'object',
          properties: {
            task_id: { type: 'string' },
            status: { enum: [...TASK_STATES] },
            model_name: { type: 'string' },
            request_id: { type: 'string' },
            submit_time: TIME,
            scheduled_time: TIME,
            end_time: TIME,
          },
        },
      },
      total: { type: 'integer' },
      total_page: { type: 'integer' },
      page_no: { type: 'integer' },
      page_size: { type: 'integer' },
    },
  },
};

/** `X-DashScope-Async: enable` turns a generation request into a task submission. */
export const ASYNC_HEADER_PARAMETER = {
  name: 'X-DashScope-Async',
  in: 'header',
  required: false,
  schema: { const: 'enable' },
  description: 'Submit as an asynchronous task: answered at once with a TaskReceipt.',
};

const taskId = { name: 'task_id', in: 'path', required: true, schema: { type: 'string' } };
const query = (name: string, schema: object) => ({ name, in: 'query', required: false, schema });

/** The task routes, with `generation` (the generation operation) also at the image-generation path. */
export function taskPaths(
  routePrefix: string,
  generation: object,
  errors: Record<string, object>,
): Record<string, object> {
  const tasks = `${routePrefix}${TASKS_PATH}`;
  return {
    [`${routePrefix}${IMAGE_GENERATION_PATH}`]: {
      post: { ...generation, operationId: 'generateImage' },
    },
    [`${tasks}/{task_id}`]: {
      get: {
        operationId: 'getTask',
        summary: 'A task: status, and the result or error once it ended',
        parameters: [taskId],
        responses: {
          '200': { description: 'The task.', content: json({ $ref: '#/components/schemas/Task' }) },
          ...errors,
        },
      },
    },
    [`${tasks}/{task_id}/cancel`]: {
      post: {
        operationId: 'cancelTask',
        summary: 'Cancel a PENDING task',
        parameters: [taskId],
        responses: {
          '200': { description: 'Canceled.', content: json({ $ref: '#/components/schemas/Task' }) },
          ...errors,
        },
      },
    },
    [tasks]: {
      get: {
        operationId: 'listTasks',
        summary: "The caller's tasks, newest first",
        parameters: [
          query('page_no', { type: 'integer', minimum: 1, default: 1 }),
          query('page_size', { type: 'integer', minimum: 1, maximum: 100, default: 10 }),
          query('status', { enum: [...TASK_STATES] }),
          query('model_name', { type: 'string' }),
          query('start_time', { type: 'string', pattern: '^\\d{14}$' }),
          query('end_time', { type: 'string', pattern: '^\\d{14}$' }),
          query('api_key_id', { type: 'string' }),
          query('region', { type: 'string' }),
        ],
        responses: {
          '200': {
            description: 'A page.',
            content: json({ $ref: '#/components/schemas/TaskList' }),
          },
          ...errors,
        },
      },
    },
  };
}
