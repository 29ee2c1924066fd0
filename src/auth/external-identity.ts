import { GatewayError } from '../errors/gateway-error.js';
import { characterCount, storedTextProblem, unstorableCharacter } from '../support/stored-text.js';

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

/** Whether a token id is an external token's (gateway tokens' ids are `tok_...`). */
export function isExternalTokenId(tokenId: string): boolean {
  return tokenId.startsWith(EXTERNAL_PREFIX);
}

/** `ext:<iss>:<sub>`, `iss` empty when the token has none: one subject per issuer. */
export function externalAccount(issuer: string | undefined, subject: string): string {
  return `${EXTERNAL_PREFIX}${issuer ?? ''}:${subject}`;
}

/**
 * The longest account and token id the database holds (`varchar(200)` and `varchar(64)` in the
 * ledger, reservations and tasks): PostgreSQL refuses a longer one, and with it the request's
 * settlement.
 */
const MAX_ACCOUNT_CHARACTERS = 200;
const MAX_TOKEN_ID_CHARACTERS = 64;

/** The claims of an external token that name its identity. */
export interface ExternalClaims {
  iss: string | undefined;
  sub: string;
  jti: string | undefined;
}

/**
 * Why `claims` cannot name an identity the gateway can record, naming the claim; undefined when
 * they can. Checked before anything is spent on the request.
 */
export function unrecordableIdentity(claims: ExternalClaims): string | undefined {
  for (const claim of ['iss', 'sub', 'jti'] as const) {
    const character = unstorableCharacter(claims[claim] ?? '');
    if (character !== undefined) return `token's ${claim} claim holds ${character}`;
  }
  if (characterCount(externalAccount(claims.iss, claims.sub)) > MAX_ACCOUNT_CHARACTERS)
    return `token's iss and sub claims make an account (ext:<iss>:<sub>) longer than ${MAX_ACCOUNT_CHARACTERS} characters`;
  if (
    claims.jti !== undefined &&
    characterCount(externalTokenId(claims.jti)) > MAX_TOKEN_ID_CHARACTERS
  )
    return `token's jti claim is longer than ${MAX_TOKEN_ID_CHARACTERS - EXTERNAL_PREFIX.length} characters`;
  return undefined;
}

/**
 * Refuses a gateway account name that the database cannot hold (as `unrecordableIdentity` does
 * for external tokens) or that is from the external tokens' namespace.
 */
export function checkGatewayAccount(account: string): void {
  const problem = storedTextProblem(account, MAX_ACCOUNT_CHARACTERS);
  if (problem !== undefined) throw new GatewayError('InvalidParameter', `account: ${problem}`);
  if (account.startsWith(EXTERNAL_PREFIX)) {
    throw new GatewayError(
      'InvalidParameter',
      `account: names starting with "${EXTERNAL_PREFIX}" are kept for external tokens`,
    );
  }
}
