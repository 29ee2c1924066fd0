/** The tasks table as Kysely sees it; times are milliseconds since the epoch. */
export interface TasksTable {
  id: string;
  /** The submission's request id: the task's answers and ledger row carry it. */
  request_id: string;
  /** The id of the task's one ledger row. */
  ledger_row_id: string;
  /** Whose task it is: the token id, or `account:<account>` for an external token without one. */
  owner: string;
  token_id: string | null;
  account: string;
  issuer: 'gateway' | 'external';
  model: string;
  /** JSON of the submitted body, validated at submission. */
  request: string;
  /** The DashScope workspace the submission named. */
  workspace: string | null;
  /** 1: the submission sent `X-DashScope-OssResourceResolve: enable`. */
  resolve_uploads: number;
  /** The quota reservation taken at submission; null when the token has no quota. */
  reservation_id: string | null;
  state: 'PENDING' | 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'CANCELED';
  submitted_at: number;
  scheduled_at: number | null;
  ended_at: number | null;
  /** JSON of the generation's result (image URLs, size, tokens), once SUCCEEDED. */
  result: string | null;
  error_code: string | null;
  error_message: string | null;
  /** The node running the task, and until when its claim holds unless renewed. */
  runner: string | null;
  lease_until: number | null;
  expires_at: number;
}
