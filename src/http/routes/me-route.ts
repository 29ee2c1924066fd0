import type { FastifyInstance } from 'fastify';
import type { Authenticator } from '../../auth/authenticator.js';
import type { TokenAdmin } from '../../tokens/token-admin.js';
import { requireToken } from '../admin-auth.js';
import { principalOf } from '../hooks/authentication.js';

export interface MeRouteOptions {
  authenticator: Authenticator;
  tokens: TokenAdmin;
}

/** GET /me: the caller's own token, for any valid token (the console's view of a non-admin). */
export function registerMeRoute(app: FastifyInstance, options: MeRouteOptions): void {
  app.get('/me', { onRequest: requireToken(options.authenticator) }, async (request, reply) => {
    reply.header('cache-control', 'no-store');
    return options.tokens.viewOf(principalOf(request));
  });
}
