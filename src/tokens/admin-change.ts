import type { Log } from '../support/log.js';

/** One change an admin made to a token: who, what, to which token, which fields. Never the JWT. */
export interface AdminChange {
  /** The admin token's id, or `cli` for the command line on the server's disk. */
  actor: string;
  action: 'create' | 'update' | 'revoke';
  tokenId: string;
  /** The API's names of the fields given (`name`, `expires_at`, `limits.rpm`, ...). */
  fields: string[];
  at: number;
}

/** Where changes go once made: the log, and the durable record when there is one. */
export interface ChangeRecorder {
  record(change: AdminChange): Promise<void>;
}

/** One structured line per change, as the gateway logs everything else. */
export function loggedChanges(log: Log, next?: ChangeRecorder): ChangeRecorder {
  return {
    record: async (change) => {
      log.info(
        {
          admin_change: {
            actor: change.actor,
            action: change.action,
            token: change.tokenId,
            fields: change.fields,
          },
        },
        `admin ${change.action} of token ${change.tokenId}`,
      );
      await next?.record(change);
    },
  };
}
