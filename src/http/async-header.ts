import type { IncomingHttpHeaders } from 'node:http';

/** DashScope's header asking for a task instead of a result (docs/api.md §11.1). */
export const ASYNC_HEADER = 'x-dashscope-async';

/** Whether the request asks for an asynchronous task: `X-DashScope-Async: enable`. */
export function wantsTask(headers: IncomingHttpHeaders): boolean {
  const value = headers[ASYNC_HEADER];
  return typeof value === 'string' && value.trim().toLowerCase() === 'enable';
}
