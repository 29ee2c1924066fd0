import { billedRow } from './row-labels.js';
import type { SettlementPlan } from '../../src/store/billing/quota-types.js';

export interface PlanOptions {
  reservationId?: string | undefined;
  rowId?: string;
  /** Images delivered, billed when the settlement bills. */
  delivered?: number;
  /** Images received from the engine; `delivered` when not given. */
  received?: number;
  /** The caller is still there; true when not given. */
  present?: boolean;
  claim?: SettlementPlan['claim'];
  task?: SettlementPlan['task'];
}

/** A settlement's plan as admission builds it, for `tokenId`'s account `acme`, without prices. */
export function settlementPlan(
  tokenId: string | undefined,
  options: PlanOptions = {},
): SettlementPlan {
  const delivered = options.delivered ?? 1;
  const row = billedRow(tokenId, delivered, options.received ?? delivered);
  if (options.rowId !== undefined) row.id = options.rowId;
  const present = options.present ?? true;
  return {
    tokenId,
    reservationId: options.reservationId,
    claim: options.claim,
    task: options.task,
    caller: { aborted: !present },
    alreadyBilled: 0,
    handedOver: false,
    row,
    imageCostMicros: 0,
  };
}
