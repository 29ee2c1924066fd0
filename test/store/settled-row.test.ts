import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { SettlementPlan } from '../../src/store/billing/quota-types.js';
import { settledRow } from '../../src/store/billing/settled-row.js';
import { JAN_1, usageRow } from '../helpers/usage-rows.js';

/** A plan of 3 images delivered at 40,000 each, 1 of them billed one by one before. */
function plan(handedOver: boolean): SettlementPlan {
  return {
    tokenId: 'tok_a',
    reservationId: 'r1',
    claim: undefined,
    task: undefined,
    caller: handedOver ? undefined : { aborted: false },
    alreadyBilled: 1,
    handedOver,
    row: usageRow(3, { imagesReceived: 4, gatewayMs: 10, createdAt: JAN_1 }),
    imageCostMicros: 40_000,
  };
}

const ENDED = JAN_1 + 250;

describe('settledRow', () => {
  it('is the planned row when billed, timed to its end', () => {
    const planned = plan(false);
    assert.deepEqual(settledRow(planned, 'billed', ENDED), { ...planned.row, gatewayMs: 250 });
    assert.equal(planned.row.gatewayMs, 10, 'the plan is left as it is');
  });

  it('bills only what was billed one by one when a lease is lost or the caller has gone', () => {
    const planned = plan(false);
    const unbilled = { imagesDelivered: 1, imagesBilled: 1, costMicros: 40_000, gatewayMs: 250 };
    assert.deepEqual(settledRow(planned, 'lease-lost', ENDED), {
      ...planned.row,
      ...unbilled,
      status: 503,
      errorCode: 'LeaseLost',
    });
    assert.deepEqual(settledRow(planned, 'caller-gone', ENDED), {
      ...planned.row,
      ...unbilled,
      status: 499,
      errorCode: 'CallerGone',
    });
  });

  it('records an answer handed over before an unbilled settlement as delivered, with its 200', () => {
    const planned = plan(true);
    for (const outcome of ['lease-lost', 'caller-gone'] as const)
      assert.deepEqual(settledRow(planned, outcome, ENDED), {
        ...planned.row,
        status: 200,
        errorCode: 'DeliveredUnbilled',
        imagesDelivered: 3,
        imagesBilled: 1,
        costMicros: 40_000,
        gatewayMs: 250,
      });
  });

  it('never times a row below zero', () => {
    assert.equal(settledRow(plan(false), 'billed', JAN_1 - 5).gatewayMs, 0);
  });
});
