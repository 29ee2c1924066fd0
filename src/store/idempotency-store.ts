import { type Kysely, type Selectable, sql } from 'kysely';
import type { IdempotencyKeysTable } from './database/admission-schema.js';
import type { Database } from './database/database.js';
import { type HotStatements, Statement } from './billing/hot-statements.js';
import type { DatabaseSchema } from './database/schema.js';

export interface IdempotencyClaimRow {
  scope: string;
  key: string;
  fingerprint: string;
  owner: string;
  requestId: string;
  now: number;
  leaseUntil: number;
  expiresAt: number;
}

export interface StoredResponse {
  status: number;
  body: string;
  headers: Record<string, string>;
  requestId: string;
}

/** What a finished request left for its repeats. */
export type StoredOutcome =
  /** The generation's result as its settlement published it, with the first request's id. */
  | { kind: 'result'; result: string; requestId: string }
  /** A whole response, as versions before settlement-time publishing stored it. */
  | { kind: 'response'; response: StoredResponse };

export type IdempotencyRecord = Pick<
  IdempotencyKeysTable,
  'fingerprint' | 'state' | 'owner' | 'lease_until' | 'expires_at'
> & { outcome: StoredOutcome | undefined };

function outcomeOf(row: Selectable<IdempotencyKeysTable>): StoredOutcome | undefined {
  if (row.result !== null) return { kind: 'result', result: row.result, requestId: row.request_id };
  if (row.status === null || row.response_body === null) return undefined;
  return {
    kind: 'response',
    response: {
      status: Number(row.status),
      body: row.response_body,
      headers: JSON.parse(row.response_headers ?? '{}') as Record<string, string>,
      requestId: row.request_id,
    },
  };
}

const insertClaim = new Statement(
  `insert into idempotency_keys (scope, idempotency_key, fingerprint, state, owner, lease_until,
     request_id, created_at, expires_at)
   values (?, ?, ?, 'running', ?, ?, ?, ?, ?)
   on conflict (scope, idempotency_key) do nothing`,
);
const deleteRunningClaim = new Statement(
  `delete from idempotency_keys
   where scope = ? and idempotency_key = ? and owner = ? and state = 'running'`,
);

/**
 * Idempotency keys and the results they replay, shared by every node through the database.
 * Claiming and abandoning are on the path of every request with a key: their statements are
 * built once (`HotStatements`); the rest are Kysely queries.
 */
export class SqlIdempotencyStore {
  private readonly db: Kysely<DatabaseSchema>;
  private readonly statements: HotStatements;

  constructor(database: Pick<Database, 'db' | 'statements'>) {
    this.db = database.db;
    this.statements = database.statements;
  }

  /** Inserts a running claim; false when the key is already there. */
  async claim(row: IdempotencyClaimRow): Promise<boolean> {
    const inserted = await this.statements.run(insertClaim, [
      row.scope,
      row.key,
      row.fingerprint,
      row.owner,
      row.leaseUntil,
      row.requestId,
      row.now,
      row.expiresAt,
    ]);
    return inserted > 0;
  }

  async find(scope: string, key: string): Promise<IdempotencyRecord | undefined> {
    const row = await this.db
      .selectFrom('idempotency_keys')
      .selectAll()
      .where('scope', '=', scope)
      .where('idempotency_key', '=', key)
      .executeTakeFirst();
    if (row === undefined) return undefined;
    return {
      fingerprint: row.fingerprint,
      state: row.state,
      owner: row.owner,
      lease_until: Number(row.lease_until),
      expires_at: Number(row.expires_at),
      outcome: row.state === 'done' ? outcomeOf(row) : undefined,
    };
  }

  /** Takes over a running claim whose owner stopped renewing it (its node died). */
  async takeOver(
    scope: string,
    key: string,
    owner: string,
    requestId: string,
    now: number,
    leaseUntil: number,
  ): Promise<boolean> {
    const result = await this.db
      .updateTable('idempotency_keys')
      .set({ owner, request_id: requestId, lease_until: leaseUntil })
      .where('scope', '=', scope)
      .where('idempotency_key', '=', key)
      .where('state', '=', 'running')
      .where('lease_until', '<=', now)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async renew(owners: readonly string[], leaseUntil: number): Promise<void> {
    if (owners.length === 0) return;
    await this.db
      .updateTable('idempotency_keys')
      .set({ lease_until: leaseUntil })
      .where('owner', 'in', owners)
      // A literal, not a parameter: only then can a plan made before the parameters are known
      // (PostgreSQL's generic plans) use the partial index on running claims' owners.
      .where('state', '=', sql.lit('running'))
      .execute();
  }

  /** Forgets a claim whose request failed, so that a retry with the key runs again. */
  async abandon(scope: string, key: string, owner: string) {
    await this.statements.run(deleteRunningClaim, [scope, key, owner]);
  }

  /** Deletes one key, if it is past its 24 hours. */
  async deleteExpiredKey(now: number, scope: string, key: string): Promise<void> {
    await this.db
      .deleteFrom('idempotency_keys')
      .where('expires_at', '<=', now)
      .where('scope', '=', scope)
      .where('idempotency_key', '=', key)
      .execute();
  }

  /**
   * Deletes at most `limit` keys past their 24 hours, through the index on expiry and then the
   * primary key; returns how many went.
   */
  async deleteExpired(now: number, limit: number): Promise<number> {
    const result = await this.db
      .deleteFrom('idempotency_keys')
      // Checked again on the row deleted, not only on the one the subquery chose.
      .where('expires_at', '<=', now)
      .where((eb) =>
        eb(
          eb.refTuple('scope', 'idempotency_key'),
          'in',
          eb
            .selectFrom('idempotency_keys')
            .select(['scope', 'idempotency_key'])
            .where('expires_at', '<=', now)
            .limit(limit)
            .$asTuple('scope', 'idempotency_key'),
        ),
      )
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
