import type { Principal } from '../domain/principal.js';

/** Turns an Authorization header into the caller it names, or throws InvalidApiKey. */
export interface Authenticator {
  verifyAuthorization(header: string | undefined): Promise<Principal>;
}
