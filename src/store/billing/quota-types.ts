import type { TaskFence } from '../../domain/task.js';
import type { UsageRow } from '../../domain/usage-row.js';

export interface ReservationRequest {
  id: string;
  tokenId: string;
  images: number;
  /** Written to the ledger if the reservation is reclaimed, so a request lost with its node keeps a row. */
  abandonedRow?: UsageRow;
}

/** A reservation as it is asked for: held from `now` until `expiresAt` unless renewed. */
export interface PendingReservation {
  request: ReservationRequest;
  now: number;
  expiresAt: number;
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

/** What billing images one by one, mid-request, must still hold: the settlement's leases. */
export interface DeliveryFence {
  reservationId: string | undefined;
  /** The Idempotency-Key claim, still running and this request's own. */
  idempotency: Pick<ClaimFence, 'scope' | 'key' | 'owner'> | undefined;
  /**
   * The request's stand-in row, carrying every image billed so far: written with the bill, so
   * that billed images always have a row, whatever becomes of the node before the request ends.
   */
  standInRow: UsageRow;
}

/** The task a settlement completes, and what it records on it. */
export interface TaskCompletion extends TaskFence {
  /** JSON of the generation's result, answered to the task's polls. */
  result: string;
  endedAt: number;
  expiresAt: number;
}

/** `billed`: the images are billed and may be delivered; otherwise nothing is billed. */
export type SettlementOutcome = 'billed' | 'lease-lost' | 'caller-gone';

/**
 * Everything a settlement needs, decided before it is sent: what it must still hold to bill (the
 * reservation, the Idempotency-Key claim, the task, the caller), and the row it writes for each
 * outcome (`settledRow`).
 */
export interface SettlementPlan {
  tokenId: string | undefined;
  /** The request's quota reservation; when it is gone, it lapsed and was reclaimed. */
  reservationId: string | undefined;
  /** Published with the result when billed, forgotten otherwise. */
  claim: ClaimFence | undefined;
  /** An async task's: must still be this node's; ends SUCCEEDED with the bill. */
  task: TaskCompletion | undefined;
  /**
   * Aborted once the caller has gone (read inside the transaction, after the locks). Undefined:
   * the images were handed over already; presence is no fence.
   */
  caller: { readonly aborted: boolean } | undefined;
  /** Images billed one by one before (an incremental stream): only the rest is charged. */
  alreadyBilled: number;
  /** The answer was handed over before this bill (a settlement billing nothing still records them delivered). */
  handedOver: boolean;
  /** The row when billed: status 200, images billed = delivered, its cost. */
  row: UsageRow;
  /** Price of one image, for the cost of rows of other outcomes. */
  imageCostMicros: number;
}

/** What a settlement came to, and the row written for it (or that describes it, when none is). */
export interface Settled {
  outcome: SettlementOutcome;
  row: UsageRow;
}

/** One request's settlement as it waits for its group. */
export interface PendingSettlement {
  plan: SettlementPlan;
  /** When it was submitted, on the monotonic clock (`performance.now()`). */
  submittedAt: number;
}
