import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { type ErrorCode, statusOf } from '../errors/error-table.js';
import { timeOrderedUuid } from '../support/time-ordered-id.js';
import type { LingeringConnections } from './lingering-close.js';

/** What Node's HTTP parser reports, as the error table names it. */
function codeOf(error: NodeJS.ErrnoException): { code: ErrorCode; message: string } {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return { code: 'RequestHeaderFieldsTooLarge', message: 'request headers are too large' };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return {
        code: 'RequestTimeout',
        message: 'the request (headers and body) did not arrive in time',
      };
    default:
      return { code: 'InvalidParameter', message: 'request: not a well-formed HTTP request' };
  }
}

/**
 * Answers what the HTTP parser refuses before any route sees it (oversized headers, malformed
 * requests, a request that took too long to arrive) with the error table's JSON body, then closes
 * the connection, lingering (`LingeringConnections`) so that a caller still sending can read the
 * answer. Node's default would send a bare status line.
 */
export function clientErrorAnswerer(
  lingering: LingeringConnections,
): (error: NodeJS.ErrnoException, socket: Socket) => void {
  return (error, socket) => {
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    // The parser refuses every chunk after its first refusal: the answer is written once.
    if (!lingering.has(socket) && socket.writable) socket.write(answerOf(error));
    lingering.afterRefusal(socket);
  };
}

function answerOf(error: NodeJS.ErrnoException): string {
  const { code, message } = codeOf(error);
  const status = statusOf(code);
  const requestId = timeOrderedUuid();
  const body = JSON.stringify({ code, message, request_id: requestId });
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n` +
    'Content-Type: application/json; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    `X-Request-Id: ${requestId}\r\n` +
    'Connection: close\r\n\r\n' +
    body
  );
}
