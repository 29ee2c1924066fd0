import type { Kysely, Selectable } from 'kysely';
import type { IdempotencyKeysTable } from './admission-schema.js';
import type { DatabaseSchema } from './schema.js';

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

/** Idempotency keys and the results they replay, shared by every node through the database. */
export class SqlIdempotencyStore {
  constructor(private readonly db: Kysely<DatabaseSchema>) {}

  /** Inserts a running claim; false when the key is already there. */
  async claim(row: IdempotencyClaimRow): Promise<boolean> {
    const result = await this.db
      .insertInto('idempotency_keys')
      .values({
        scope: row.scope,
        idempotency_key: row.key,
        fingerprint: row.fingerprint,
        state: 'running',
        owner: row.owner,
        lease_until: row.leaseUntil,
        request_id: row.requestId,
        status: null,
        response_body: null,
        response_headers: null,
        result: null,
        created_at: row.now,
        expires_at: row.expiresAt,
      })
      .onConflict((conflict) => conflict.columns(['scope', 'idempotency_key']).doNothing())
      .executeTakeFirst();
    return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
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
      .where('state', '=', 'running')
      .execute();
  }

  /** Forgets a claim whose request failed, so that a retry with the key runs again. */
  async abandon(scope: string, key: string, owner: string) {
    await this.db
      .deleteFrom('idempotency_keys')
      .where('scope', '=', scope)
      .where('idempotency_key', '=', key)
      .where('owner', '=', owner)
      .where('state', '=', 'running')
      .execute();
  }

  /** Deletes keys past their 24 hours; one key when given. Returns how many went. */
  async deleteExpired(now: number, one?: { scope: string; key: string }): Promise<number> {
    let query = this.db.deleteFrom('idempotency_keys').where('expires_at', '<=', now);
    if (one !== undefined)
      query = query.where('scope', '=', one.scope).where('idempotency_key', '=', one.key);
    const result = await query.executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
