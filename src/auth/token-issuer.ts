import { randomBytes } from 'node:crypto';
import { SignJWT } from 'jose';
import type { TokenRecord, TokenStore } from '../store/token-store.js';
import { checkGatewayAccount } from './external-identity.js';

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
