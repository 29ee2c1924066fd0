import { randomBytes } from 'node:crypto';
import { SignJWT } from 'jose';
import type { TokenRecord, TokenStore } from '../store/token-store.js';
import { GatewayError } from '../errors/gateway-error.js';
import { storedTextProblem } from '../support/stored-text.js';
import { checkGatewayAccount } from './external-identity.js';

/** The longest token name the database holds (`tokens.name`, `varchar(200)`). */
const MAX_NAME_CHARACTERS = 200;

export interface IssueRequest {
  name: string;
  account: string;
  expiresInSeconds: number | undefined;
  admin: boolean;
}

export interface IssuedToken {
  token: string;
  record: TokenRecord;
}

/** Creates gateway tokens: a database row (the source of truth) and an HS256 JWT naming it. */
export class TokenIssuer {
  constructor(
    private readonly store: TokenStore,
    private readonly signingKey: Uint8Array,
    private readonly now: () => number = Date.now,
  ) {}

  async issue(request: IssueRequest): Promise<IssuedToken> {
    checkTokenName(request.name);
    checkGatewayAccount(request.account);
    const createdAt = this.now();
    const record: TokenRecord = {
      id: `tok_${randomBytes(12).toString('base64url')}`,
      name: request.name,
      account: request.account,
      createdAt,
      expiresAt:
        request.expiresInSeconds === undefined
          ? undefined
          : createdAt + request.expiresInSeconds * 1000,
      revokedAt: undefined,
      admin: request.admin,
    };
    await this.store.insert(record);
    const jwt = new SignJWT({})
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(record.account)
      .setJti(record.id)
      .setIssuedAt(Math.floor(createdAt / 1000));
    if (record.expiresAt !== undefined) jwt.setExpirationTime(Math.floor(record.expiresAt / 1000));
    return { token: await jwt.sign(this.signingKey), record };
  }
}

/** Refuses a token name that the database cannot hold. */
export function checkTokenName(name: string): void {
  const problem = storedTextProblem(name, MAX_NAME_CHARACTERS);
  if (problem !== undefined) throw new GatewayError('InvalidParameter', `name: ${problem}`);
}
