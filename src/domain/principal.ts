/** Who is calling, as established by a verified bearer token. */
export interface Principal {
  /** The gateway token's id, or `ext:<jti>` for an external token; undefined when it has none. */
  tokenId: string | undefined;
  account: string;
  admin: boolean;
  issuer: 'gateway' | 'external';
}
