/** What a task's status says, as DashScope names it; UNKNOWN is only ever answered, never stored. */
export const TASK_STATES = ['PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELED'] as const;
export type TaskState = (typeof TASK_STATES)[number];

export function isTaskState(value: unknown): value is TaskState {
  return typeof value === 'string' && (TASK_STATES as readonly string[]).includes(value);
}

/** A task as the store keeps it. Times are milliseconds since the epoch. */
export interface TaskRecord {
  id: string;
  /** The submission's request id. */
  requestId: string;
  /** The id of the task's one ledger row. */
  ledgerRowId: string;
  /** Whose task it is: the token id, or `account:<account>` for an external token without one. */
  owner: string;
  tokenId: string | undefined;
  account: string;
  issuer: 'gateway' | 'external';
  model: string;
  /** JSON of the submitted body. */
  request: string;
  /** The DashScope workspace the submission named, for the task's ledger row. */
  workspace: string | undefined;
  /** The submission sent `X-DashScope-OssResourceResolve: enable`: `oss://` inputs name uploads. */
  resolveUploads: boolean;
  reservationId: string | undefined;
  state: TaskState;
  submittedAt: number;
  scheduledAt: number | undefined;
  endedAt: number | undefined;
  /** JSON of the generation's result, once SUCCEEDED. */
  result: string | undefined;
  errorCode: string | undefined;
  errorMessage: string | undefined;
  runner: string | undefined;
  leaseUntil: number | undefined;
  expiresAt: number;
}

export type NewTask = Omit<
  TaskRecord,
  | 'state'
  | 'scheduledAt'
  | 'endedAt'
  | 'result'
  | 'errorCode'
  | 'errorMessage'
  | 'runner'
  | 'leaseUntil'
>;

/** GET /tasks filters; every one optional. Times bound the submission time. */
export interface TaskFilter {
  owner: string | undefined;
  tokenId: string | undefined;
  state: TaskState | undefined;
  model: string | undefined;
  submittedFrom: number | undefined;
  submittedUntil: number | undefined;
}

/** How a task that did not succeed ended. */
export interface TaskEnd {
  state: 'FAILED' | 'CANCELED';
  errorCode: string;
  errorMessage: string;
  endedAt: number;
  expiresAt: number;
}

/** What the settlement of a task's generation must still hold: the task, claimed by this node. */
export interface TaskFence {
  id: string;
  runner: string;
}
