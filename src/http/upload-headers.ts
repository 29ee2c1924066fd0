import type { IncomingHttpHeaders } from 'node:http';

/** docs/api.md §12.3: the header with which the DashScope SDK asks for `oss://` resolution. */
export const OSS_RESOLVE_HEADER = 'x-dashscope-ossresourceresolve';

/** Whether a generation request asked for its `oss://` inputs to be resolved (`enable`). */
export function resolvesUploads(headers: IncomingHttpHeaders): boolean {
  const value = headers[OSS_RESOLVE_HEADER];
  return typeof value === 'string' && value.trim().toLowerCase() === 'enable';
}
