import type { Kysely, Transaction } from 'kysely';
import { STAND_IN_STATUS, type UsageRow } from '../../domain/usage-row.js';
import { GroupCommit } from '../../support/group-commit.js';
import type { Database } from '../database/database.js';
import { isDatabaseUnavailable } from '../database/database-unavailable.js';
import { type HotStatements, isCommitUncertain, Statement } from './hot-statements.js';
import type {
  DeliveryFence,
  PendingReservation,
  PendingSettlement,
  ReservationRequest,
  Settled,
  SettlementOutcome,
  SettlementPlan,
} from './quota-types.js';
import { reserveAtOnce, reserveTogether } from './reservation-group.js';
import { settleGroup } from './settlement-group.js';
import type { DatabaseSchema } from '../database/schema.js';
import { writeLedgerRowsIn } from './ledger-writer.js';

export type {
  ClaimFence,
  DeliveryFence,
  ReservationRequest,
  Settled,
  SettlementOutcome,
  SettlementPlan,
  TaskCompletion,
} from './quota-types.js';

/** The most requests one reservation or settlement transaction carries. */
const MAX_GROUP = 256;

const dropReservation = new Statement(
  'delete from quota_reservations where id = ? returning images',
);
const unhold = new Statement(
  'update tokens set images_reserved = images_reserved - ? where id = ?',
);

/** Rolls back a partial bill whose fence no longer holds. */
class DeliveryRefused extends Error {
  constructor(readonly outcome: SettlementOutcome) {
    super(outcome);
  }
}

/** Per statement, to stay well under SQLite's limit on bound parameters. */
const IDS_PER_STATEMENT = 500;

/**
 * Image quota reservations and their settlement, atomic in the database so that any number of
 * nodes sharing it can never spend more than a token's quota. Every statement means the same on
 * SQLite and PostgreSQL. Each transaction starts with a write, so SQLite takes its write lock
 * up front instead of failing to upgrade a read.
 *
 * Reservations and settlements are on every request's path: their statements are built once
 * (`HotStatements`), and those that arrive together share one transaction (`GroupCommit`). The
 * rest (renewal, reclaiming, the billed check) are Kysely queries.
 */
export class SqlQuotaStore {
  private readonly db: Kysely<DatabaseSchema>;
  private readonly statements: HotStatements;
  private readonly reservations: GroupCommit<PendingReservation, boolean>;
  private readonly settlements: GroupCommit<PendingSettlement, Settled>;

  constructor(database: Pick<Database, 'db' | 'statements'>) {
    this.db = database.db;
    this.statements = database.statements;
    const failsEveryone = (error: unknown) =>
      isDatabaseUnavailable(error) || isCommitUncertain(error);
    this.reservations = new GroupCommit({
      maxSize: MAX_GROUP,
      execute: async (members) =>
        (this.statements.dialect === 'postgres'
          ? await reserveAtOnce(this.statements, members)
          : undefined) ?? this.statements.transaction((runner) => reserveTogether(runner, members)),
      failsEveryone,
    });
    this.settlements = new GroupCommit({
      maxSize: MAX_GROUP,
      execute: (members) => settleGroup(this.statements, members),
      failsEveryone,
    });
  }

  /**
   * Holds `images` against the token's quota until `expiresAt`; false when settled plus held
   * images plus these would exceed the quota. A token without a quota always succeeds.
   */
  reserve(request: ReservationRequest, now: number, expiresAt: number): Promise<boolean> {
    return this.reservations.submit({ request, now, expiresAt });
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

  /** Pushes one reservation's expiry forward; false when it is gone (lapsed and reclaimed). */
  async extend(id: string, expiresAt: number): Promise<boolean> {
    const result = await this.db
      .updateTable('quota_reservations')
      .set({ expires_at: expiresAt })
      .where('id', '=', id)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /**
   * Ends a request that produced images, in one transaction: frees its reservation, bills what it
   * delivered, publishes its result under its Idempotency-Key, ends its task SUCCEEDED and writes
   * its ledger row, so a billed request always has its row and its replayable result. The leases
   * are the fence: a reservation that lapsed and was reclaimed, or a key or task another node took
   * over, bills nothing (`lease-lost`); a caller gone by the time of the commit bills nothing either
   * (`caller-gone`). Settlements that arrive together share one transaction (`settleGroup`). The
   * row (`settledRow`) is built inside the transaction, so its timings include the waits for a
   * connection and for locks.
   */
  settle(plan: SettlementPlan): Promise<Settled> {
    return this.settlements.submit({ plan, submittedAt: performance.now() });
  }

  /**
   * Bills `images` of a running request before it settles (an incremental stream bills each image
   * once it reached the caller's connection), in one short transaction under the settlement's
   * leases: the Idempotency-Key claim still its own, the reservation still held (else
   * `lease-lost`, and nothing is billed). The caller's presence is no fence: the images were
   * handed over. The images move from reserved to used, the reservation
   * counts them in `images_billed`, and the request's stand-in row says how many were billed: a
   * node killed at any moment after the commit leaves those images with a row. The request's own
   * row replaces the stand-in when it ends.
   */
  async billDelivered(
    tokenId: string | undefined,
    fence: DeliveryFence,
    images: number,
  ): Promise<SettlementOutcome> {
    try {
      await this.db.transaction().execute(async (trx) => {
        const claim = fence.idempotency;
        if (claim !== undefined) {
          // A write, not a read: it locks the claim until the bill commits.
          const held = await trx
            .updateTable('idempotency_keys')
            .set({ state: 'running' })
            .where('scope', '=', claim.scope)
            .where('idempotency_key', '=', claim.key)
            .where('owner', '=', claim.owner)
            .where('state', '=', 'running')
            .executeTakeFirst();
          if (held.numUpdatedRows === 0n) throw new DeliveryRefused('lease-lost');
        }
        if (fence.reservationId !== undefined) {
          const moved = await trx
            .updateTable('quota_reservations')
            .set((eb) => ({
              images: eb('images', '-', images),
              images_billed: eb('images_billed', '+', images),
            }))
            .where('id', '=', fence.reservationId)
            .where('images', '>=', images)
            .executeTakeFirst();
          if (moved.numUpdatedRows === 0n) throw new DeliveryRefused('lease-lost');
        }
        if (tokenId !== undefined)
          await this.charge(trx, tokenId, fence.reservationId === undefined ? 0 : images, images);
        await writeLedgerRowsIn(trx, [fence.standInRow]);
      });
    } catch (error) {
      if (error instanceof DeliveryRefused) return error.outcome;
      throw error;
    }
    return 'billed';
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

  /** The images the request's stand-in row `rowId` says were billed; 0 when it has none. */
  async billedOnStandIn(rowId: string): Promise<number> {
    const row = await this.db
      .selectFrom('usage_ledger')
      .select('images_billed')
      .where('id', '=', rowId)
      .where('status', '=', STAND_IN_STATUS)
      .executeTakeFirst();
    return row === undefined ? 0 : Number(row.images_billed);
  }

  /** Frees a reservation without billing anything. */
  async release(reservationId: string, tokenId: string): Promise<void> {
    await this.statements.transaction(async (runner) => {
      const [row] = await runner.rows(dropReservation, [reservationId]);
      const reserved = row === undefined ? 0 : Number(row.images);
      if (reserved > 0) await runner.run(unhold, [reserved, tokenId]);
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
      // A stand-in of images billed one by one keeps them (and what it says was delivered).
      const abandoned: UsageRow[] = [];
      for (const row of rows)
        if (row.ledger_row !== null) abandoned.push(JSON.parse(row.ledger_row) as UsageRow);
      await writeLedgerRowsIn(trx, abandoned);
      return [...byToken.values()].reduce((sum, images) => sum + images, 0);
    });
  }

  /** Moves a token's images: `freed` no longer reserved, `billed` used. */
  private async charge(
    trx: Transaction<DatabaseSchema>,
    tokenId: string,
    freed: number,
    billed: number,
  ): Promise<void> {
    await trx
      .updateTable('tokens')
      .set((eb) => ({
        images_reserved: eb('images_reserved', '-', freed),
        images_used: eb('images_used', '+', billed),
      }))
      .where('id', '=', tokenId)
      .execute();
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
