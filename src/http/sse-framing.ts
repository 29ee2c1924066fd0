import { errorBody, type GatewayError } from '../errors/gateway-error.js';

/**
 * DashScope's Server-Sent Events framing (docs/api.md, Streaming), as the official SDK parses it:
 * it reads `id:`, `event:`, `status:` and `data:` lines, the data as one line of JSON, and skips
 * every other line. `:HTTP_STATUS/<n>` is DashScope's own status comment, kept for raw clients;
 * the SDK reads an error's status from `status:` only (and assumes 400 without it), so error
 * events carry both. No space after a colon: the SDK's asyncio parser matches `event:error` exactly.
 */

export const EVENT_STREAM_TYPE = 'text/event-stream; charset=utf-8';

/** A result event: `data` is one response body of the request's model. */
export function resultEvent(id: number, data: unknown): string {
  return `id:${id}\nevent:result\n:HTTP_STATUS/200\ndata:${JSON.stringify(data)}\n\n`;
}

/** The error event that ends a stream, with the status a JSON answer would have had. */
export function errorEvent(id: number, error: GatewayError, requestId: string): string {
  return (
    `id:${id}\nevent:error\n:HTTP_STATUS/${error.status}\nstatus:${error.status}\n` +
    `data:${JSON.stringify(errorBody(error, requestId))}\n\n`
  );
}

/** A comment line: ignored by every parser, it keeps idle proxies from closing the connection. */
export const KEEP_ALIVE_COMMENT = ':keep-alive\n\n';
