import type { Kysely, Transaction } from 'kysely';
import type { UsageRow } from '../domain/usage-row.js';
import type { DatabaseSchema } from './schema.js';
import { toLedgerRow } from './usage-rows.js';

export interface ReservationRequest {
  id: string;
  tokenId: string;
  images: number;
  /** Written to the ledger if the reservation is reclaimed, so a request lost with its node keeps a row. */
  abandonedRow?: UsageRow;
}

/** The Idempotency-Key claim a settlement must still hold, and the result it publishes. */
export interface ClaimFence {
  scope: string;
  key: string;
  owner: string;
  requestId: string;
  /** JSON of the generation's result, replayed to repeats of the request. */
  result: string;
}

/** What a settlement must still hold to bill: the leases its request ran under. */
export interface SettlementFence {
  /** The request's quota reservation; when it is gone, it lapsed and was reclaimed. */
  reservationId: string | undefined;
  idempotency: ClaimFence | undefined;
  /** False once the caller has gone; checked inside the transaction, before the bill. */
  callerPresent: () => boolean;
}

/** `billed`: the images are billed and may be delivered; otherwise nothing is billed. */
export type SettlementOutcome = 'billed' | 'lease-lost' | 'caller-gone';

/** Per statement, to stay well under SQLite's limit on bound parameters. */
const IDS_PER_STATEMENT = 500;

/**
 * Image quota reservations and their settlement, atomic in the database so that any number of
 * nodes sharing it can never spend more than a token's quota. Every statement is the same on
 * SQLite and PostgreSQL. Each transaction starts with a write, so SQLite takes its write lock
 * up front instead of failing to upgrade a read.
 */
export class SqlQuotaStore {
  constructor(private readonly db: Kysely<DatabaseSchema>) {}

  /**
   * Holds `images` against the token's quota until `expiresAt`; false when settled plus held
   * images plus these would exceed the quota. A token without a quota always succeeds.
   */
  async reserve(request: ReservationRequest, now: number, expiresAt: number): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const held = await trx
        .updateTable('tokens')
        .set((eb) => ({ images_reserved: eb('images_reserved', '+', request.images) }))
        .where('id', '=', request.tokenId)
        .where((eb) =>
          eb.or([
            eb('image_quota', 'is', null),
            eb(
              eb(eb('images_used', '+', eb.ref('images_reserved')), '+', request.images),
              '<=',
              eb.ref('image_quota'),
            ),
          ]),
        )
        .executeTakeFirst();
      if (held.numUpdatedRows === 0n) return false;
      await trx
        .insertInto('quota_reservations')
        .values({
          id: request.id,
          token_id: request.tokenId,
          images: request.images,
          created_at: now,
          expires_at: expiresAt,
          ledger_row:
            request.abandonedRow === undefined ? null : JSON.stringify(request.abandonedRow),
        })
        .execute();
      return true;
    });
  }

  /** Pushes the expiry of live reservations forward; the ones already reclaimed stay gone. */
  async renew(ids: readonly string[], expiresAt: number): Promise<void> {
    for (let start = 0; start < ids.length; start += IDS_PER_STATEMENT) {
      await this.db
        .updateTable('quota_reservations')
        .set({ expires_at: expiresAt })
        .where('id', 'in', ids.slice(start, start + IDS_PER_STATEMENT))
        .execute();
    }
  }

  /**
   * Ends a request that produced images, in one transaction: frees its reservation, bills what it
   * delivered, publishes its result under its Idempotency-Key and writes its ledger row, so a
   * billed request always has its row and its replayable result. The leases are the fence: a
   * reservation that lapsed and was reclaimed, or a key another node took over, bills nothing
   * (`lease-lost`); a caller gone by the time of the commit bills nothing either (`caller-gone`).
   * The row is built inside the transaction, so its timings include the waits for a connection
   * and for locks.
   */
  async settle(
    tokenId: string | undefined,
    fence: SettlementFence,
    rowFor: (outcome: SettlementOutcome) => UsageRow,
  ): Promise<SettlementOutcome> {
    return this.db.transaction().execute(async (trx) => {
      const reserved =
        fence.reservationId === undefined
          ? undefined
          : await this.dropReservation(trx, fence.reservationId);
      let outcome: SettlementOutcome =
        reserved === 0 ? 'lease-lost' : fence.callerPresent() ? 'billed' : 'caller-gone';
      if (fence.idempotency !== undefined) {
        const held = await this.endClaim(trx, fence.idempotency, outcome === 'billed');
        if (!held) outcome = 'lease-lost';
      }
      const row = rowFor(outcome);
      const billed = outcome === 'billed' ? row.imagesBilled : 0;
      if (tokenId !== undefined && ((reserved ?? 0) > 0 || billed > 0)) {
        await trx
          .updateTable('tokens')
          .set((eb) => ({
            images_reserved: eb('images_reserved', '-', reserved ?? 0),
            images_used: eb('images_used', '+', billed),
          }))
          .where('id', '=', tokenId)
          .execute();
      }
      // A request whose reservation was reclaimed replaces the stand-in row left for it.
      const values = toLedgerRow(row);
      await trx
        .insertInto('usage_ledger')
        .values(values)
        .onConflict((conflict) => conflict.column('id').doUpdateSet({ ...values, id: undefined }))
        .execute();
      return outcome;
    });
  }

  /** Whether the ledger row `rowId` was written by a settlement that billed its images. */
  async isBilled(rowId: string): Promise<boolean> {
    const row = await this.db
      .selectFrom('usage_ledger')
      .select('status')
      .where('id', '=', rowId)
      .executeTakeFirst();
    return row !== undefined && Number(row.status) === 200;
  }

  /** Frees a reservation without billing anything. */
  async release(reservationId: string, tokenId: string): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      const reserved = await this.dropReservation(trx, reservationId);
      if (reserved > 0) await this.unhold(trx, tokenId, reserved);
    });
  }

  /**
   * Frees every reservation whose expiry has passed: those of nodes that died mid-request.
   * Limited to one token when given. Returns the number of images freed.
   */
  async reclaimExpired(now: number, tokenId?: string): Promise<number> {
    return this.db.transaction().execute(async (trx) => {
      let expired = trx.deleteFrom('quota_reservations').where('expires_at', '<=', now);
      if (tokenId !== undefined) expired = expired.where('token_id', '=', tokenId);
      const rows = await expired.returning(['token_id', 'images', 'ledger_row']).execute();
      const byToken = new Map<string, number>();
      for (const row of rows)
        byToken.set(row.token_id, (byToken.get(row.token_id) ?? 0) + Number(row.images));
      // A fixed order keeps two reclaiming nodes from locking the same tokens in opposite orders.
      for (const token of [...byToken.keys()].sort())
        await this.unhold(trx, token, byToken.get(token) as number);
      for (const row of rows) {
        if (row.ledger_row === null) continue;
        await trx
          .insertInto('usage_ledger')
          .values(toLedgerRow(JSON.parse(row.ledger_row) as UsageRow))
          .onConflict((conflict) => conflict.column('id').doNothing())
          .execute();
      }
      return [...byToken.values()].reduce((sum, images) => sum + images, 0);
    });
  }

  /**
   * Ends the Idempotency-Key claim a settlement runs under: published with the result when the
   * request is billed, forgotten otherwise (a repeat then runs again). False when the claim is no
   * longer this request's: another node took it over after its lease lapsed.
   */
  private async endClaim(
    trx: Transaction<DatabaseSchema>,
    claim: ClaimFence,
    publish: boolean,
  ): Promise<boolean> {
    const result = publish
      ? await trx
          .updateTable('idempotency_keys')
          .set({ state: 'done', status: 200, result: claim.result, request_id: claim.requestId })
          .where('scope', '=', claim.scope)
          .where('idempotency_key', '=', claim.key)
          .where('owner', '=', claim.owner)
          .where('state', '=', 'running')
          .executeTakeFirst()
          .then((done) => done.numUpdatedRows)
      : await trx
          .deleteFrom('idempotency_keys')
          .where('scope', '=', claim.scope)
          .where('idempotency_key', '=', claim.key)
          .where('owner', '=', claim.owner)
          .where('state', '=', 'running')
          .executeTakeFirst()
          .then((gone) => gone.numDeletedRows);
    return result > 0n;
  }

  private async dropReservation(
    trx: Transaction<DatabaseSchema>,
    reservationId: string,
  ): Promise<number> {
    const row = await trx
      .deleteFrom('quota_reservations')
      .where('id', '=', reservationId)
      .returning('images')
      .executeTakeFirst();
    return row === undefined ? 0 : Number(row.images);
  }

  private async unhold(
    trx: Transaction<DatabaseSchema>,
    tokenId: string,
    images: number,
  ): Promise<void> {
    await trx
      .updateTable('tokens')
      .set((eb) => ({ images_reserved: eb('images_reserved', '-', images) }))
      .where('id', '=', tokenId)
      .execute();
  }
}
