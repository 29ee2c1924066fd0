import type { Principal } from '../domain/principal.js';

/**
 * Turns an Authorization header into the caller it names, or throws InvalidApiKey. A caller seen
 * recently may be answered at once, without a promise; callers await either.
 */
export interface Authenticator {
  verifyAuthorization(header: string | undefined): Principal | Promise<Principal>;
}

/**
 * Whether a token, named by its id, may still act: for credentials a token hands on, which
 * outlive the request that made them (an upload certificate). Answered from the same cached
 * token rows as authentication, so it is as fresh as IMAGEGATE_TOKEN_CACHE_MS.
 */
export interface TokenStanding {
  /** Rejects with InvalidApiKey when the token is revoked, expired or unknown. */
  checkStanding(tokenId: string): Promise<void>;
}
