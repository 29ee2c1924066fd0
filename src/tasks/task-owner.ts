import type { Principal } from '../domain/principal.js';
import type { TaskRecord } from '../domain/task.js';

/** Whose tasks a caller sees: its token's, or its account's for an external token without an id. */
export function ownerOf(principal: Principal): string {
  return principal.tokenId ?? `account:${principal.account}`;
}

/** The caller a task runs as, rebuilt from its record on whichever node runs it. */
export function principalOfTask(task: TaskRecord): Principal {
  return { tokenId: task.tokenId, account: task.account, admin: false, issuer: task.issuer };
}

export function mayRead(principal: Principal, task: TaskRecord): boolean {
  return principal.admin || task.owner === ownerOf(principal);
}
