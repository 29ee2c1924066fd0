import type { FastifyInstance } from 'fastify';
import { ANY_ORIGIN } from '../../config/cors-origins-setting.js';

/**
 * Request headers a page may send: the gateway's own, and every `X-DashScope-*` header (and
 * `X-Accel-Buffering`) the official DashScope SDK sets, so that the same calls work from a browser.
 */
export const CORS_REQUEST_HEADERS = [
  'Authorization',
  'Content-Type',
  'Idempotency-Key',
  'X-Request-Id',
  'X-DashScope-Async',
  'X-DashScope-SSE',
  'X-DashScope-OssResourceResolve',
  'X-DashScope-WorkSpace',
  'X-DashScope-DataInspection',
  'X-DashScope-Plugin',
  'X-DashScope-EncryptionKey',
  'X-Accel-Buffering',
] as const;

/** Response headers a page may read, beyond the ones every browser shows (Content-Type, ...). */
export const CORS_RESPONSE_HEADERS = [
  'X-Request-Id',
  'Retry-After',
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
  'Idempotent-Replayed',
  'X-Prompt-Truncated',
] as const;

const METHODS = 'GET, HEAD, POST';
/** How long a browser may reuse a preflight's answer (Chromium caps it at 2 hours). */
const PREFLIGHT_MAX_AGE_S = '600';

/**
 * Cross-origin requests from the configured origins, on every route, before anything else looks
 * at the request: a preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) is
 * answered 204 here, without authentication, accounting or limits; every other answer to an
 * allowed origin, errors included, says which origin may read it and which headers it exposes.
 * An origin not listed gets no CORS header, and its preflight goes on to the route like any
 * `OPTIONS` (405 on the generation paths, 404 elsewhere), so a browser refuses the call.
 */
export function addCorsHooks(app: FastifyInstance, origins: readonly string[]): void {
  if (origins.length === 0) return;
  const anyOrigin = origins.includes(ANY_ORIGIN);
  const allowed = new Set(origins);
  const requestHeaders = CORS_REQUEST_HEADERS.join(', ');
  const responseHeaders = CORS_RESPONSE_HEADERS.join(', ');
  app.addHook('onRequest', (request, reply, done) => {
    // The answer depends on Origin unless every origin gets the same; caches must know.
    if (!anyOrigin) reply.header('vary', 'Origin');
    const origin = request.headers.origin;
    if (origin === undefined || !(anyOrigin || allowed.has(origin))) return done();
    reply.header('access-control-allow-origin', anyOrigin ? ANY_ORIGIN : origin);
    if (
      request.method === 'OPTIONS' &&
      request.headers['access-control-request-method'] !== undefined
    ) {
      // Answered here; a callback hook that sends a reply does not call done().
      reply
        .header('access-control-allow-methods', METHODS)
        .header('access-control-allow-headers', requestHeaders)
        .header('access-control-max-age', PREFLIGHT_MAX_AGE_S)
        .code(204)
        .send();
      return;
    }
    reply.header('access-control-expose-headers', responseHeaders);
    done();
  });
}
