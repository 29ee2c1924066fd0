/** Who is calling, as established by a verified bearer token. */
export interface Principal {
  /** The token's id (`jti`); undefined for an external token without one. */
  tokenId: string | undefined;
  account: string;
  admin: boolean;
  issuer: 'gateway' | 'external';
}
