import { LEDGER_CODES, type LedgerCode } from '../../errors/error-table.js';
import type { UsageRow } from '../../domain/usage-row.js';
import type { SettlementOutcome, SettlementPlan } from './quota-types.js';

/** Why a settlement billed nothing, when its answer was not handed over before. */
const UNBILLED_CODES: Record<Exclude<SettlementOutcome, 'billed'>, LedgerCode> = {
  'lease-lost': 'LeaseLost',
  'caller-gone': 'CallerGone',
};

/**
 * The ledger row of `plan` settled with `outcome` at `endedAt`. Billed: the planned row. Otherwise
 * only the images billed one by one before stay billed (and priced); an answer handed over before
 * is still recorded delivered, with the 200 its caller received (`DeliveredUnbilled`).
 */
export function settledRow(
  plan: SettlementPlan,
  outcome: SettlementOutcome,
  endedAt: number,
): UsageRow {
  // A spread alone is V8's fast clone of an object of one shape; the property is set after it.
  const row = { ...plan.row };
  row.gatewayMs = Math.max(0, endedAt - plan.row.createdAt);
  if (outcome === 'billed') return row;
  const billed = plan.alreadyBilled;
  const code = plan.handedOver ? 'DeliveredUnbilled' : UNBILLED_CODES[outcome];
  row.status = LEDGER_CODES[code].status;
  row.errorCode = code;
  row.imagesBilled = billed;
  row.imagesDelivered = plan.handedOver ? plan.row.imagesDelivered : billed;
  row.costMicros = billed * plan.imageCostMicros;
  return row;
}
