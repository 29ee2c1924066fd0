/** One change an admin made to a token: who, what, to which token, which fields. Never the JWT. */
export interface AdminChange {
  /** The admin token's id, or `cli` for the command line on the server's disk. */
  actor: string;
  action: 'create' | 'update' | 'revoke';
  tokenId: string;
  /** The API's names of the fields given (`name`, `expires_at`, `limits.rpm`, ...). */
  fields: string[];
  /** Milliseconds since the epoch. */
  at: number;
}
