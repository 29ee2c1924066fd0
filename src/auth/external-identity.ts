import { GatewayError } from '../errors/gateway-error.js';

/**
 * Token ids and account names of external tokens start with this; gateway token ids start with
 * `tok_` and gateway accounts may not start with it. So an external token can never be limited,
 * billed, revoked or replayed to as a gateway token, nor recorded under a gateway account,
 * whatever its `jti` and `sub` say.
 */
const EXTERNAL_PREFIX = 'ext:';

/** `ext:<jti>`: jti values are unique across the issuers of one application (RFC 7519). */
export function externalTokenId(jti: string): string {
  return `${EXTERNAL_PREFIX}${jti}`;
}

/** `ext:<iss>:<sub>`, `iss` empty when the token has none: one subject per issuer. */
export function externalAccount(issuer: string | undefined, subject: string): string {
  return `${EXTERNAL_PREFIX}${issuer ?? ''}:${subject}`;
}

/** Refuses a gateway account name from the external tokens' namespace. */
export function checkGatewayAccount(account: string): void {
  if (account.startsWith(EXTERNAL_PREFIX)) {
    throw new GatewayError(
      'InvalidParameter',
      `account: names starting with "${EXTERNAL_PREFIX}" are kept for external tokens`,
    );
  }
}
