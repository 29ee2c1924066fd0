import type { FastifyInstance } from 'fastify';
import type { Authenticator } from '../../auth/authenticator.js';
import type { Principal } from '../../domain/principal.js';
import { finishHook } from './finish-hook.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The verified caller; set on every route of an accounted scope before its body is read. */
    principal: Principal | undefined;
  }
}

/**
 * Verifies the bearer token in `onRequest`, so an unauthenticated caller never costs us its
 * upload. A caller the authenticator remembers is let through in the same turn, without a promise.
 */
export function addAuthenticationHooks(scope: FastifyInstance, authenticator: Authenticator): void {
  scope.decorateRequest('principal', undefined);
  scope.addHook('onRequest', (request, _reply, done) =>
    finishHook(
      () => authenticator.verifyAuthorization(request.headers.authorization),
      (principal) => {
        request.principal = principal;
      },
      done,
    ),
  );
}

/** The caller of a request in an accounted scope; its absence is a wiring bug (a 500), not a 401. */
export function principalOf(request: { principal: Principal | undefined }): Principal {
  if (request.principal === undefined) throw new Error('route is not behind authentication');
  return request.principal;
}
