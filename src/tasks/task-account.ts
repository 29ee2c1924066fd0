import { DASHSCOPE_TASK_FRONT_DOOR } from '../domain/front-door.js';
import type { TaskRecord } from '../domain/task.js';
import { RequestAccount } from '../ledger/request-account.js';

/** The accounting of a task's one ledger row, which each later step of the task writes again. */
export function taskAccount(task: TaskRecord): RequestAccount {
  const account = new RequestAccount(task.requestId, task.submittedAt, task.ledgerRowId);
  account.frontDoor = DASHSCOPE_TASK_FRONT_DOOR;
  account.workspace = task.workspace;
  return account;
}
