import { timeOrderedUuid } from '../support/time-ordered-id.js';
import type { IncomingMessage } from 'node:http';

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Keeps a caller's X-Request-Id when it is short and plain, so traces join up; otherwise a
 * time-ordered UUID, which sorts as the requests came.
 */
export function requestIdFor(request: IncomingMessage): string {
  const incoming = request.headers['x-request-id'];
  return typeof incoming === 'string' && SANE_REQUEST_ID.test(incoming)
    ? incoming
    : timeOrderedUuid();
}
