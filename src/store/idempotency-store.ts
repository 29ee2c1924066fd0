import type { Kysely } from 'kysely';
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

export type IdempotencyRecord = Pick<
  IdempotencyKeysTable,
  'fingerprint' | 'state' | 'owner' | 'lease_until' | 'expires_at'
> & { response: StoredResponse | undefined };

/** Idempotency keys and the responses they replay, shared by every node through the database. */
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
      response:
        row.state === 'done' && row.status !== null && row.response_body !== null
          ? {
              status: Number(row.status),
              body: row.response_body,
              headers: JSON.parse(row.response_headers ?? '{}') as Record<string, string>,
              requestId: row.request_id,
            }
          : undefined,
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

  async complete(scope: string, key: string, owner: string, response: StoredResponse) {
    await this.db
      .updateTable('idempotency_keys')
      .set({
        state: 'done',
        status: response.status,
        response_body: response.body,
        response_headers: JSON.stringify(response.headers),
        request_id: response.requestId,
      })
      .where('scope', '=', scope)
      .where('idempotency_key', '=', key)
      .where('owner', '=', owner)
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
