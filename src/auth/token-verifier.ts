import { createPublicKey, type KeyObject } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import {
  createRemoteJWKSet,
  decodeProtectedHeader,
  errors as joseErrors,
  type JWTPayload,
  jwtVerify,
  type JWTVerifyGetKey,
} from 'jose';
import type { Config } from '../config/config.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { Principal } from '../domain/principal.js';
import type { TokenStanding } from './authenticator.js';
import type { TokenRecord } from '../store/token-store.js';
import type { TtlCache } from '../support/ttl-cache.js';
import { LRUCache } from 'lru-cache';
import {
  externalAccount,
  externalTokenId,
  isExternalTokenId,
  unrecordableIdentity,
} from './external-identity.js';
import { echoQuoted } from '../errors/echo.js';

const EXTERNAL_ALGORITHMS = ['RS256', 'ES256'];
/** Tolerated clock difference between the token's issuer and this node, for exp and nbf. */
const CLOCK_TOLERANCE_SECONDS = 5;
/**
 * Gateway tokens whose signature held, by their exact text. A signature's validity never changes
 * for the same bytes under the same key, and what can change (revocation, expiry) is read from
 * the token's row on every request, so verifying the HMAC again would only spend CPU.
 */
const VERIFIED_TOKENS = 10_000;

interface GatewayClaims {
  jti: string;
  sub: string;
}

export interface ExternalKeys {
  publicKeys: KeyObject[];
  jwks: JWTVerifyGetKey | undefined;
  issuer: string | undefined;
  audience: string | undefined;
}

export async function loadExternalKeys(settings: Config['externalTokens']): Promise<ExternalKeys> {
  const publicKeys = await Promise.all(
    settings.publicKeyFiles.map(async (file) => createPublicKey(await readFile(file, 'utf8'))),
  );
  return {
    publicKeys,
    jwks:
      settings.jwksUrl === undefined ? undefined : createRemoteJWKSet(new URL(settings.jwksUrl)),
    issuer: settings.issuer,
    audience: settings.audience,
  };
}

function unauthorized(message: string): GatewayError {
  return new GatewayError('InvalidApiKey', message);
}

/**
 * Checks a bearer token. Gateway tokens are HS256 and must name a live row in the token store;
 * external tokens are RS256/ES256 under configured keys. The algorithm decides which key is
 * tried, and only that key, so no token can be checked against a key of the wrong kind.
 */
export class TokenVerifier implements TokenStanding {
  private readonly verified = new LRUCache<string, GatewayClaims>({ max: VERIFIED_TOKENS });

  constructor(
    private readonly signingKey: Uint8Array,
    private readonly tokens: TtlCache<TokenRecord | undefined>,
    private readonly external: ExternalKeys,
    private readonly now: () => number = Date.now,
  ) {}

  /** Rejects (never throws) with InvalidApiKey; answers at once when the caller is remembered. */
  verifyAuthorization(header: string | undefined): Principal | Promise<Principal> {
    try {
      if (header === undefined || header === '')
        throw unauthorized('Authorization header is missing');
      const match = /^Bearer +([^\s]+)\s*$/i.exec(header);
      if (match === null) throw unauthorized('Authorization header must be "Bearer <token>"');
      return this.verify(match[1] as string);
    } catch (error) {
      return Promise.reject(error as Error);
    }
  }

  /**
   * At once when the token's signature and its row are both remembered, a promise otherwise.
   * Throws at once when the remembered row refuses the token.
   */
  private verify(token: string): Principal | Promise<Principal> {
    const verified = this.verified.get(token);
    if (verified === undefined) return this.verifyUnseen(token);
    const remembered = this.tokens.peek(verified.jti);
    return remembered === undefined
      ? this.gatewayPrincipal(verified)
      : this.principalOfRow(remembered.value);
  }

  private async verifyUnseen(token: string): Promise<Principal> {
    let algorithm: string | undefined;
    try {
      algorithm = decodeProtectedHeader(token).alg;
    } catch {
      throw unauthorized('token is not a well-formed JWT');
    }
    if (algorithm === 'HS256') return this.verifyGatewayToken(token);
    if (
      algorithm !== undefined &&
      EXTERNAL_ALGORITHMS.includes(algorithm) &&
      this.hasExternalKeys()
    ) {
      return this.verifyExternalToken(token);
    }
    throw unauthorized(`token algorithm ${echoQuoted(algorithm ?? null)} is not accepted`);
  }

  async checkStanding(tokenId: string): Promise<void> {
    const record = await this.tokens.find(tokenId);
    // An external token has no row unless it was revoked by registering one.
    if (isExternalTokenId(tokenId)) {
      if (record?.revokedAt !== undefined) throw unauthorized('token has been revoked');
      return;
    }
    this.principalOfRow(record);
  }

  private hasExternalKeys(): boolean {
    return this.external.publicKeys.length > 0 || this.external.jwks !== undefined;
  }

  private async verifyGatewayToken(token: string): Promise<Principal> {
    return this.gatewayPrincipal(await this.verifyGatewaySignature(token));
  }

  /** The row, not the signed claims, decides whether a gateway token is still good. */
  private async gatewayPrincipal(claims: GatewayClaims): Promise<Principal> {
    return this.principalOfRow(await this.tokens.find(claims.jti));
  }

  private principalOfRow(record: TokenRecord | undefined): Principal {
    if (record === undefined) throw unauthorized('token is not known to this gateway');
    if (record.revokedAt !== undefined) throw unauthorized('token has been revoked');
    if (record.expiresAt !== undefined && record.expiresAt <= this.now())
      throw unauthorized('token has expired');
    return { tokenId: record.id, account: record.account, admin: record.admin, issuer: 'gateway' };
  }

  private async verifyGatewaySignature(token: string): Promise<GatewayClaims> {
    const payload = await this.checked(() =>
      jwtVerify(token, this.signingKey, { algorithms: ['HS256'], ...this.timing() }).catch(
        (error: unknown) => {
          // The signature held (jose checks it before claims). The row, not the signed `exp`,
          // decides a gateway token's expiry, so that `token update` can extend it.
          if (error instanceof joseErrors.JWTExpired) return { payload: error.payload };
          throw error;
        },
      ),
    );
    if (typeof payload.jti !== 'string' || typeof payload.sub !== 'string') {
      throw unauthorized('token lacks its jti or sub claim');
    }
    const claims = { jti: payload.jti, sub: payload.sub };
    this.verified.set(token, claims);
    return claims;
  }

  private async verifyExternalToken(token: string): Promise<Principal> {
    const options = {
      algorithms: EXTERNAL_ALGORITHMS,
      issuer: this.external.issuer,
      audience: this.external.audience,
      ...this.timing(),
    };
    let payload: JWTPayload | undefined;
    let lastError: unknown;
    for (const key of this.external.publicKeys) {
      try {
        payload = (await jwtVerify(token, key, options)).payload;
        break;
      } catch (error) {
        lastError = error;
        if (
          !(error instanceof joseErrors.JWSSignatureVerificationFailed) &&
          !(error instanceof joseErrors.JOSENotSupported)
        )
          break;
      }
    }
    if (payload === undefined && this.external.jwks !== undefined && !isClaimError(lastError)) {
      payload = await this.checked(() =>
        jwtVerify(token, this.external.jwks as JWTVerifyGetKey, options),
      );
    }
    if (payload === undefined) throw describeJoseError(lastError);
    if (typeof payload.sub !== 'string' || payload.sub === '')
      throw unauthorized('token lacks its sub claim');
    const claims = {
      iss: typeof payload.iss === 'string' ? payload.iss : undefined,
      sub: payload.sub,
      jti: typeof payload.jti === 'string' ? payload.jti : undefined,
    };
    const unrecordable = unrecordableIdentity(claims);
    if (unrecordable !== undefined) throw unauthorized(unrecordable);
    const tokenId = claims.jti === undefined ? undefined : externalTokenId(claims.jti);
    if (tokenId !== undefined) {
      // An external token may be revoked by registering its id, `ext:<jti>`, as revoked in the
      // token store.
      const record = await this.tokens.find(tokenId);
      if (record?.revokedAt !== undefined) throw unauthorized('token has been revoked');
    }
    return {
      tokenId,
      account: externalAccount(claims.iss, claims.sub),
      admin: false,
      issuer: 'external',
    };
  }

  private timing() {
    return { currentDate: new Date(this.now()), clockTolerance: CLOCK_TOLERANCE_SECONDS };
  }

  private async checked(verify: () => Promise<{ payload: JWTPayload }>): Promise<JWTPayload> {
    try {
      return (await verify()).payload;
    } catch (error) {
      throw describeJoseError(error);
    }
  }
}

function isClaimError(error: unknown): boolean {
  return (
    error instanceof joseErrors.JWTExpired || error instanceof joseErrors.JWTClaimValidationFailed
  );
}

function describeJoseError(error: unknown): GatewayError {
  if (error instanceof GatewayError) return error;
  if (error instanceof joseErrors.JWTExpired) return unauthorized('token has expired');
  if (error instanceof joseErrors.JWTClaimValidationFailed) {
    return unauthorized(
      error.claim === 'nbf' ? 'token is not yet valid' : `token claim ${error.claim} is invalid`,
    );
  }
  if (error instanceof joseErrors.JWSSignatureVerificationFailed)
    return unauthorized('token signature is invalid');
  if (error instanceof joseErrors.JOSEAlgNotAllowed)
    return unauthorized('token algorithm is not accepted');
  if (error instanceof joseErrors.JWKSNoMatchingKey)
    return unauthorized('token signature is invalid: no matching key');
  if (error instanceof joseErrors.JWKSTimeout)
    return unauthorized('token keys could not be fetched in time');
  return unauthorized('token is invalid');
}
