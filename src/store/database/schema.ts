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

export interface DatabaseSchema {
  tokens: TokensTable & TokenLimitColumns;
  quota_reservations: QuotaReservationsTable;
  usage_ledger: UsageLedgerTable;
  idempotency_keys: IdempotencyKeysTable;
  tasks: TasksTable;
  upload_usage: UploadUsageTable;
}
