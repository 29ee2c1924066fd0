import type { onRequestAsyncHookHandler } from 'fastify';
import { GatewayError } from '../errors/gateway-error.js';
import type { Authenticator } from '../auth/authenticator.js';

/** An onRequest hook for /admin routes: a valid gateway token with the admin flag, or 401. */
export function requireAdmin(authenticator: Authenticator): onRequestAsyncHookHandler {
  return async (request) => {
    const principal = await authenticator.verifyAuthorization(request.headers.authorization);
    if (!principal.admin)
      throw new GatewayError('InvalidApiKey', 'this endpoint needs an admin token');
    request.principal = principal;
  };
}

/** An onRequest hook for /me routes: any valid token, or 401. */
export function requireToken(authenticator: Authenticator): onRequestAsyncHookHandler {
  return async (request) => {
    request.principal = await authenticator.verifyAuthorization(request.headers.authorization);
  };
}
