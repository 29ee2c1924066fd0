import { Statement, type StatementRunner } from './hot-statements.js';
import { jsonParameter } from '../database/json-parameter.js';
import { ledgerJson, ledgerJsonInsertText } from './ledger-writer.js';
import type { PendingSettlement, Settled } from './quota-types.js';
import { settledRow } from './settled-row.js';
import { callerGone, endedAt, newlyBilled, outcomeOf } from './settlement-decision.js';
import { tokensLockedInIdOrder } from './token-locks.js';

/** Every modifying part of the statement applies only when all its reservations are there. */
const APPLIES = '(select applies from whole)';

/**
 * PostgreSQL only: frees the reservations, charges their tokens and writes the rows of a group in
 * one statement, a transaction of its own. The reservations are locked first, without waiting
 * (NOWAIT); every change is conditional on all of them being there, and the statement answers
 * whether it applied: when one is gone, nothing changes. The tokens' rows are locked next, in the
 * order of their ids. The reservations' ids go in as an array (`= any`), as the tokens' do, which
 * the generic plan reads through the primary key; an `in (select ...)` over the JSON was planned
 * as a scan of every reservation in flight. Every group size shares the one prepared text: ids,
 * charges and rows are each one JSON parameter.
 */
const freeChargeAndRecord = new Statement(
  `with settling as materialized (
     select id from quota_reservations where id = any(array(select jsonb_array_elements_text(?::jsonb)))
     for update nowait),
   whole as materialized (select (select count(*) from settling) = ?::integer as applies),
   dropped as (
     delete from quota_reservations where id = any(array(select id from settling)) and ${APPLIES}
     returning token_id, images),
   charges as (
     select token_id, billed from jsonb_to_recordset(?::jsonb) as charge (token_id varchar, billed integer)
     where ${APPLIES}),
   ${tokensLockedInIdOrder('select token_id from charges')},
   charged as (
     update tokens set
       images_reserved = images_reserved
         - coalesce((select sum(images) from dropped where dropped.token_id = tokens.id), 0),
       images_used = images_used + charges.billed
     from charges join locked on locked.id = charges.token_id
     where tokens.id = locked.id
       and (charges.billed > 0 or exists (select 1 from dropped where dropped.token_id = tokens.id))),
   recorded as (${ledgerJsonInsertText(APPLIES)})
   select applies from whole`,
);

/**
 * Whether `members` may be settled by one statement: none holds an Idempotency-Key or runs a task
 * (their fences are read in the transaction), and each reservation is charged back to a token.
 */
export function fitsOneStatement(members: readonly PendingSettlement[]): boolean {
  for (const { plan } of members) {
    if (plan.claim !== undefined || plan.task !== undefined) return false;
    if (plan.tokenId === undefined && plan.reservationId !== undefined) return false;
  }
  return true;
}

/**
 * `members` (`fitsOneStatement`) settled by one statement, outside any transaction, on
 * PostgreSQL: one round trip instead of four and one more per token. Undefined, with nothing
 * changed, when a reservation is gone (lapsed and reclaimed, or named twice) or locked (being
 * renewed, reclaimed, waited on): the transaction settles the group then.
 *
 * A caller's presence is read before the statement is sent, as the transaction reads it before
 * charging. NOWAIT keeps the statement from waiting on a reservation's lock, which a caller may
 * leave during; the transaction waits, and reads the caller's presence after the wait.
 */
export async function settleAtOnce(
  runner: StatementRunner,
  members: readonly PendingSettlement[],
): Promise<Settled[] | undefined> {
  const reservationIds: string[] = [];
  const billedByToken = new Map<string, number>();
  const settled = members.map((member): Settled => {
    const { plan } = member;
    if (plan.reservationId !== undefined) reservationIds.push(plan.reservationId);
    const outcome = outcomeOf({ reservationHeld: true, callerGone: callerGone(plan) });
    const row = settledRow(plan, outcome, endedAt(member));
    if (plan.tokenId !== undefined)
      billedByToken.set(
        plan.tokenId,
        (billedByToken.get(plan.tokenId) ?? 0) + newlyBilled(plan, outcome, row),
      );
    return { outcome, row };
  });
  const charges = [...billedByToken].map(([tokenId, billed]) => ({ token_id: tokenId, billed }));
  let applied: unknown;
  try {
    const [answer] = await runner.rows(freeChargeAndRecord, [
      jsonParameter(reservationIds),
      reservationIds.length,
      jsonParameter(charges),
      ledgerJson(settled.map(({ row }) => row)),
    ]);
    applied = answer?.applies;
  } catch (error) {
    if (lockedAway(error)) return undefined;
    throw error;
  }
  return applied === true ? settled : undefined;
}

/**
 * Whether the statement failed on a reservation's lock (lock_not_available, from NOWAIT), having
 * changed nothing, for the transaction to wait for. The same code raised by the lock time-out (in
 * ProcessInterrupts) is the token's row held too long: the database not serving, which the
 * transaction would only wait out again.
 */
function lockedAway(error: unknown): boolean {
  const { code, routine } = error as { code?: unknown; routine?: unknown };
  return code === '55P03' && routine !== 'ProcessInterrupts';
}
