import { timeOrderedUuid } from '../../support/time-ordered-id.js';
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';

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

/**
 * Echoes the request's id on every answer; registered first, so that even the load shedder's
 * 503s and the CORS preflights carry it.
 */
export function addRequestIdHooks(app: FastifyInstance): void {
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });
}
