import type { AdminChange } from '../domain/admin-change.js';
import type { Log } from '../support/log.js';

/** Where changes go once made: the log, and the durable record when there is one. */
export interface ChangeRecorder {
  record(change: AdminChange): Promise<void>;
}

/** The durable record of changes, newest first. */
export interface ChangeHistory {
  list(tokenId: string | undefined, limit: number): Promise<AdminChange[]>;
}

/** A change as GET /admin/changes shows it. */
export function changeView(change: AdminChange) {
  return {
    at: new Date(change.at).toISOString(),
    actor: change.actor,
    action: change.action,
    token: change.tokenId,
    fields: change.fields,
  };
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
