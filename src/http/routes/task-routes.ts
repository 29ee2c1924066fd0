import type { FastifyInstance } from 'fastify';
import { TASKS_PATH, underPrefix } from '../../domain/api-paths.js';
import { isTaskState, TASK_STATES } from '../../domain/task.js';
import { invalidParameter } from '../../errors/gateway-error.js';
import { holdsControlCharacter } from '../../support/stored-text.js';
import type { Authenticator } from '../../auth/authenticator.js';
import { parseFilterTime } from '../../tasks/dashscope-time.js';
import type { TaskListQuery, TaskService } from '../../tasks/task-service.js';
import { taskAnswer, taskListEntry } from '../../tasks/task-view.js';
import { CallerGone } from '../../errors/caller-gone.js';
import { addAuthenticationHooks, principalOf } from '../hooks/authentication.js';
import type { PublicOrigins } from '../public-origins.js';
import { answerFinished } from '../answer-finished.js';
import { whenClosed } from '../when-closed.js';
import { echoQuoted } from '../../errors/echo.js';

export interface TaskRoutesOptions {
  routePrefix: string;
  authenticator: Authenticator;
  tasks: TaskService;
  /** What a finished task's image URLs name. */
  origins: PublicOrigins;
}

const DEFAULT_PAGE_SIZE = 10;
const MAX_PAGE_SIZE = 100;
/** The SDK's list parameters; `region` is accepted and ignored (one gateway, one region). */
const LIST_PARAMETERS = new Set([
  'status',
  'start_time',
  'end_time',
  'model_name',
  'api_key_id',
  'region',
  'page_no',
  'page_size',
]);

/**
 * DashScope's task routes (docs/api.md §11): status, cancel and list. Authenticated, but not
 * billed and not in the usage ledger: they read the task store and never call an upstream.
 */
export function registerTaskRoutes(app: FastifyInstance, options: TaskRoutesOptions): void {
  const { tasks } = options;
  void app.register(async (scope) => {
    addAuthenticationHooks(scope, options.authenticator);
    for (const base of underPrefix(options.routePrefix, TASKS_PATH)) {
      scope.get<{ Params: { task_id: string } }>(`${base}/:task_id`, async (request) => {
        const task = await tasks.find(principalOf(request), request.params.task_id);
        return taskAnswer(task, request.id, options.origins.presenterFor(request.host));
      });
      scope.post<{ Params: { task_id: string } }>(`${base}/:task_id/cancel`, async (request) => {
        const task = await tasks.cancel(principalOf(request), request.params.task_id);
        return {
          request_id: request.id,
          output: { task_id: task.id, task_status: task.state },
        };
      });
      scope.get(base, async (request, reply) => {
        const query = readListQuery(request.query);
        // Aborted when the connection ends before the answer: the caller left, or the server cut
        // it (a time-out, shutdown); nobody is left to answer either way.
        const callerLeft = new AbortController();
        whenClosed(reply, () => {
          if (!answerFinished(reply.raw)) callerLeft.abort(new CallerGone());
        });
        const page = await tasks.list(principalOf(request), query, callerLeft.signal);
        return {
          request_id: request.id,
          data: page.tasks.map(taskListEntry),
          total: page.total,
          total_page: Math.ceil(page.total / query.pageSize),
          page_no: query.pageNo,
          page_size: query.pageSize,
        };
      });
    }
  });
}

function readListQuery(raw: unknown): TaskListQuery {
  const parameters: Record<string, string> = {};
  for (const [name, value] of Object.entries((raw ?? {}) as Record<string, unknown>)) {
    if (!LIST_PARAMETERS.has(name))
      throw invalidParameter(
        name,
        `is not a parameter of GET /tasks; use ${[...LIST_PARAMETERS].join(', ')}`,
      );
    if (typeof value !== 'string') throw invalidParameter(name, 'must be given once');
    // No model, token id or other value holds one, and PostgreSQL refuses U+0000 in a filter.
    if (holdsControlCharacter(value))
      throw invalidParameter(name, 'must not hold a control character');
    parameters[name] = value;
  }
  const status = parameters.status;
  if (status !== undefined && !isTaskState(status))
    throw invalidParameter('status', `must be one of ${TASK_STATES.join(', ')}`);
  const submittedFrom = timeOf('start_time', parameters.start_time);
  const until = timeOf('end_time', parameters.end_time);
  // The filter names a second: every task submitted during it is included.
  const submittedUntil = until === undefined ? undefined : until + 999;
  if (submittedFrom !== undefined && submittedUntil !== undefined && submittedFrom > submittedUntil)
    throw invalidParameter('end_time', 'must not be before start_time');
  return {
    filter: {
      state: status,
      model: parameters.model_name,
      tokenId: parameters.api_key_id,
      submittedFrom,
      submittedUntil,
    },
    pageNo: integerOf('page_no', parameters.page_no, 1, 1_000_000, 1),
    pageSize: integerOf('page_size', parameters.page_size, 1, MAX_PAGE_SIZE, DEFAULT_PAGE_SIZE),
  };
}

function timeOf(name: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const time = parseFilterTime(text);
  if (time === undefined)
    throw invalidParameter(name, `must be a UTC time as YYYYMMDDhhmmss, got ${echoQuoted(text)}`);
  return time;
}

function integerOf(
  name: string,
  text: string | undefined,
  min: number,
  max: number,
  fallback: number,
): number {
  if (text === undefined) return fallback;
  const value = /^\d{1,9}$/.test(text) ? Number(text) : Number.NaN;
  if (!(value >= min && value <= max))
    throw invalidParameter(
      name,
      `must be an integer from ${min} to ${max}, got ${echoQuoted(text)}`,
    );
  return value;
}
