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
   * Ends a request that produced images: frees its reservation, counts what was produced and
   * writes its ledger row, all in one transaction, so a billed request always has its row. A
   * reservation that was already reclaimed (its node stalled past the expiry) is still billed:
   * the images were delivered.
   */
  async settle(
    reservationId: string | undefined,
    tokenId: string | undefined,
    ledgerRow: UsageRow,
  ): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      const reserved =
        reservationId === undefined ? 0 : await this.dropReservation(trx, reservationId);
      if (tokenId !== undefined && (reserved > 0 || ledgerRow.imagesProduced > 0)) {
        await trx
          .updateTable('tokens')
          .set((eb) => ({
            images_reserved: eb('images_reserved', '-', reserved),
            images_used: eb('images_used', '+', ledgerRow.imagesProduced),
          }))
          .where('id', '=', tokenId)
          .execute();
      }
      // A stalled node settling after its reservation was reclaimed replaces the abandoned row.
      const row = toLedgerRow(ledgerRow);
      await trx
        .insertInto('usage_ledger')
        .values(row)
        .onConflict((conflict) => conflict.column('id').doUpdateSet({ ...row, id: undefined }))
        .execute();
    });
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
