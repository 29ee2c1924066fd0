import type { FastifyRequest } from 'fastify';
import type { Authenticator } from '../../auth/authenticator.js';
import type { Principal } from '../../domain/principal.js';

/**
 * The `onRequest` hook of the console's own calls: any valid token, verified before the body is
 * read (401 InvalidApiKey otherwise).
 */
export function verifiedCaller(authenticator: Authenticator) {
  return async (request: FastifyRequest): Promise<void> => {
    request.principal = await authenticator.verifyAuthorization(request.headers.authorization);
  };
}

/** Whom a console call is counted against: the token, or the account of one without an id. */
export function consoleCaller(request: FastifyRequest): string {
  const principal = request.principal as Principal;
  return principal.tokenId ?? `account:${principal.account}`;
}
