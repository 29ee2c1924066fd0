import type { Principal } from '../domain/principal.js';

/**
 * Turns an Authorization header into the caller it names, or throws InvalidApiKey. A caller seen
 * recently may be answered at once, without a promise; callers await either.
 */
export interface Authenticator {
  verifyAuthorization(header: string | undefined): Principal | Promise<Principal>;
}
