import { DASHSCOPE_TASK_FRONT_DOOR } from '../domain/front-door.js';
import type { TaskRecord } from '../domain/task.js';
import type { RowLabels } from '../ledger/row-labels.js';

/** The labels of a task's one ledger row, which whoever ends the task writes. */
export function taskLabels(task: TaskRecord): RowLabels {
  return {
    rowId: task.ledgerRowId,
    requestId: task.requestId,
    receivedAt: task.submittedAt,
    tokenId: task.tokenId,
    account: task.account,
    frontDoor: DASHSCOPE_TASK_FRONT_DOOR,
    workspace: task.workspace,
  };
}
