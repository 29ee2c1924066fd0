import type { UsageRow } from '../../domain/usage-row.js';
import type { PendingSettlement, SettlementOutcome, SettlementPlan } from './quota-types.js';

/** What a settlement found of its fences, each read once; undefined: not read yet. */
export interface FencesFound {
  /** Its reservation (if any) was still there. */
  reservationHeld: boolean;
  /** The caller had gone, read after the reservation's lock. */
  callerGone: boolean;
  /** Its task (if any) was still this node's, and ended SUCCEEDED. */
  taskKept?: boolean | undefined;
  /** Its Idempotency-Key claim (if any) was still its own. */
  claimKept?: boolean | undefined;
}

/**
 * The one decision of a settlement's outcome: any lease lost (the reservation reclaimed, the task
 * or the claim taken over) bills nothing (`lease-lost`); else a caller gone bills nothing
 * (`caller-gone`); else it bills. A fence not read yet is taken as holding.
 */
export function outcomeOf(found: FencesFound): SettlementOutcome {
  if (!found.reservationHeld || found.taskKept === false || found.claimKept === false)
    return 'lease-lost';
  return found.callerGone ? 'caller-gone' : 'billed';
}

/** Whether the caller of `plan` has gone; a plan without one (handed over already) never has. */
export function callerGone(plan: SettlementPlan): boolean {
  return plan.caller?.aborted === true;
}

/** Images a settlement charges its token: those of its row beyond the ones billed one by one. */
export function newlyBilled(
  plan: SettlementPlan,
  outcome: SettlementOutcome,
  row: UsageRow,
): number {
  return outcome === 'billed' ? Math.max(0, row.imagesBilled - plan.alreadyBilled) : 0;
}

/**
 * When `member`'s settlement ends, on the request's clock: the end its row was planned with, moved
 * on by the time the settlement has waited since (for a connection, for locks), as a row built
 * here would be timed.
 */
export function endedAt(member: PendingSettlement): number {
  const { row } = member.plan;
  return row.createdAt + row.gatewayMs + (performance.now() - member.submittedAt);
}
