import type {
  IdempotencyKeysTable,
  QuotaReservationsTable,
  TokenLimitColumns,
  UploadUsageTable,
  UsageLedgerTable,
} from './admission-schema.js';
import type { TasksTable } from './task-schema.js';

/** Table shapes as Kysely sees them. Times are milliseconds since the epoch; flags are 0 or 1. */
export interface TokensTable {
  id: string;
  name: string;
  account: string;
  created_at: number;
  expires_at: number | null;
  revoked_at: number | null;
  is_admin: number;
}

/** One admin change to a token; `fields` is the comma-separated list of the API's field names. */
export interface AdminChangesTable {
  id: string;
  at: number;
  actor: string;
  action: string;
  token_id: string;
  fields: string;
}

export interface DatabaseSchema {
  tokens: TokensTable & TokenLimitColumns;
  quota_reservations: QuotaReservationsTable;
  usage_ledger: UsageLedgerTable;
  idempotency_keys: IdempotencyKeysTable;
  tasks: TasksTable;
  upload_usage: UploadUsageTable;
  admin_changes: AdminChangesTable;
}
