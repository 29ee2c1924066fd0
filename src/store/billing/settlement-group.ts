import {
  type HotStatements,
  type Parameter,
  parametersOf,
  type ResultRow,
  placeholderRows,
  placeholders,
  Statement,
  type StatementRunner,
  statementsByCount,
} from './hot-statements.js';
import { jsonParameter } from '../database/json-parameter.js';
import { ledgerJson, ledgerJsonInsertText, writeLedgerRows } from './ledger-writer.js';
import type { UsageRow } from '../../domain/usage-row.js';
import type { ClaimFence, PendingSettlement, SettlementOutcome } from './quota-types.js';
import { tokensLockedInIdOrder } from './token-locks.js';

const dropReservations = statementsByCount(
  (count) =>
    `delete from quota_reservations where id in (${placeholders(count)}) returning id, images`,
);

/** Publishes results under the keys still claimed by their requests; returns the keys it did. */
const publishResults = statementsByCount((count) => {
  const claims = Array.from({ length: count }, (_, index) =>
    index === 0
      ? 'select ? as scope, ? as idempotency_key, ? as owner, ? as result, ? as request_id'
      : 'select ?, ?, ?, ?, ?',
  ).join(' union all ');
  return `update idempotency_keys set state = 'done', status = 200, result = claim.result, request_id = claim.request_id
    from (${claims}) as claim
    where idempotency_keys.scope = claim.scope and idempotency_keys.idempotency_key = claim.idempotency_key
      and idempotency_keys.owner = claim.owner and idempotency_keys.state = 'running'
    returning idempotency_keys.scope, idempotency_keys.idempotency_key, idempotency_keys.owner`;
});

/** Forgets the keys still claimed by requests that billed nothing; returns the keys it did. */
const forgetClaims = statementsByCount(
  (count) =>
    `delete from idempotency_keys where state = 'running' and (scope, idempotency_key, owner) in (values ${placeholderRows(count, 3)})
    returning scope, idempotency_key, owner`,
);

const chargeToken = new Statement(
  'update tokens set images_reserved = images_reserved - ?, images_used = images_used + ? where id = ?',
);

/**
 * PostgreSQL only: frees the reservations, charges their tokens and writes the rows of a group in
 * one statement. The data-modifying WITH runs as one transaction of its own; its last line
 * divides by zero, undoing all of it, when a reservation was already gone. The tokens' rows are
 * locked first, in the order of their ids. The reservations' ids go in as an array (`= any`), as
 * the tokens' do, which the generic plan reads through the primary key; an `in (select ...)` over
 * the JSON was planned as a scan of every reservation in flight. Every group size shares the one
 * prepared text: ids, charges and rows are each one JSON parameter.
 */
const freeChargeAndRecord = new Statement(
  `with dropped as (
     delete from quota_reservations where id in (
       select id from quota_reservations where id = any(array(select jsonb_array_elements_text(?::jsonb)))
       for update nowait)
     returning token_id, images),
   charges as (
     select token_id, billed from jsonb_to_recordset(?::jsonb) as charge (token_id varchar, billed integer)),
   ${tokensLockedInIdOrder('select token_id from charges')},
   charged as (
     update tokens set
       images_reserved = images_reserved
         - coalesce((select sum(images) from dropped where dropped.token_id = tokens.id), 0),
       images_used = images_used + charges.billed
     from charges join locked on locked.id = charges.token_id
     where tokens.id = locked.id
       and (charges.billed > 0 or exists (select 1 from dropped where dropped.token_id = tokens.id))),
   recorded as (${ledgerJsonInsertText()})
   select 1 / ((select count(*) from dropped) = ?::integer)::integer as whole`,
);

/** Whether `settleAtOnce`'s statement failed having changed nothing, for the transaction to judge. */
function handsOver(error: unknown): boolean {
  const { code, routine } = error as { code?: unknown; routine?: unknown };
  // division_by_zero: a reservation was gone (lapsed and reclaimed, or named twice).
  if (code === '22012') return true;
  // lock_not_available, from NOWAIT: a reservation is locked (being renewed, reclaimed, waited
  // on). The same code raised by the lock time-out (in ProcessInterrupts) is the token's row held
  // too long: the database not serving, which the transaction would only wait out again.
  return code === '55P03' && routine !== 'ProcessInterrupts';
}

/**
 * `members` settled by one statement, outside any transaction, on PostgreSQL: one round trip
 * instead of four and one more per token. Applies when the members hold no Idempotency-Key and
 * every reservation is still there and free to take; undefined otherwise, with nothing changed,
 * and the group goes through `settleTogether`.
 *
 * A caller's presence is read before the statement is sent, as the transaction reads it before
 * charging. NOWAIT keeps the statement from waiting on a reservation's lock, which a caller may
 * leave during; the transaction waits, and reads the caller's presence after the wait.
 */
export async function settleAtOnce(
  runner: StatementRunner,
  members: readonly PendingSettlement[],
): Promise<SettlementOutcome[] | undefined> {
  const billedByToken = new Map<string, number>();
  for (const member of members) {
    if (member.fence.idempotency !== undefined) return undefined;
    if (member.tokenId !== undefined) billedByToken.set(member.tokenId, 0);
    // A reservation is charged back to its member's token; without one, the transaction judges.
    else if (member.fence.reservationId !== undefined) return undefined;
  }
  const reservationIds = reservationIdsOf(members);
  const outcomes = members.map((member): SettlementOutcome =>
    member.fence.callerPresent() ? 'billed' : 'caller-gone',
  );
  const rows = members.map((member, index) => member.rowFor(outcomes[index] ?? 'caller-gone'));
  members.forEach((member, index) => {
    if (outcomes[index] === 'billed' && member.tokenId !== undefined)
      billedByToken.set(
        member.tokenId,
        (billedByToken.get(member.tokenId) ?? 0) + newlyBilled(member, rows[index]),
      );
  });
  const charges = [...billedByToken].map(([tokenId, billed]) => ({ token_id: tokenId, billed }));
  try {
    await runner.rows(freeChargeAndRecord, [
      jsonParameter(reservationIds),
      jsonParameter(charges),
      ledgerJson(rows),
      reservationIds.length,
    ]);
  } catch (error) {
    if (handsOver(error)) return undefined;
    throw error;
  }
  return outcomes;
}

/** Images a billed member's row bills beyond those billed one by one before (an incremental stream). */
function newlyBilled(member: PendingSettlement, row: UsageRow | undefined): number {
  return Math.max(0, (row?.imagesBilled ?? 0) - (member.fence.alreadyBilled ?? 0));
}

/**
 * Settles `members` in the one transaction `runner` is in, with a statement per kind of change
 * rather than per request: one DELETE frees every reservation, one UPDATE publishes every result
 * and one DELETE forgets every key left unpublished, one UPDATE per token charges it, one INSERT
 * writes every ledger row. Each member keeps exactly the fences of a settlement of its own: a
 * reservation that is gone or a claim no longer its own bills nothing (`lease-lost`), a caller
 * gone by now bills nothing (`caller-gone`), and its row is built here, inside the transaction.
 */
export async function settleTogether(
  runner: StatementRunner,
  dialect: HotStatements['dialect'],
  members: readonly PendingSettlement[],
): Promise<SettlementOutcome[]> {
  const reserved = await dropHeld(runner, members);
  const settling = members.map((member, index): Settling => {
    const held = reserved[index];
    const outcome: SettlementOutcome =
      held === GONE ? 'lease-lost' : member.fence.callerPresent() ? 'billed' : 'caller-gone';
    return { member, reserved: held === GONE ? 0 : (held ?? 0), outcome };
  });
  await endClaims(runner, settling);

  const rows = settling.map(({ member, outcome }) => member.rowFor(outcome));
  const charges = new Map<string, { reserved: number; billed: number }>();
  settling.forEach(({ member, reserved: held, outcome }, index) => {
    if (member.tokenId === undefined) return;
    const charge = charges.get(member.tokenId) ?? { reserved: 0, billed: 0 };
    charge.reserved += held;
    // Images billed one by one before (an incremental stream) are on the row, not charged twice.
    if (outcome === 'billed') charge.billed += newlyBilled(member, rows[index]);
    charges.set(member.tokenId, charge);
  });
  // A fixed order keeps two nodes from locking the same tokens in opposite orders.
  for (const tokenId of [...charges.keys()].sort()) {
    const charge = charges.get(tokenId);
    if (charge === undefined || (charge.reserved === 0 && charge.billed === 0)) continue;
    await runner.run(chargeToken, [charge.reserved, charge.billed, tokenId]);
  }
  // A request whose reservation was reclaimed replaces the stand-in row left for it.
  await writeLedgerRows(runner, dialect, rows);
  return settling.map(({ outcome }) => outcome);
}

interface Settling {
  member: PendingSettlement;
  /** Images its reservation held; 0 without one, or when it was already gone. */
  reserved: number;
  outcome: SettlementOutcome;
}

/** A reservation already gone when its settlement came: it lapsed and was reclaimed. */
const GONE = -1;

/**
 * Frees the members' reservations; the images each still held, in member order (0 when all were
 * billed one by one), GONE for a reservation already gone, undefined for a member without one.
 */
async function dropHeld(
  runner: StatementRunner,
  members: readonly PendingSettlement[],
): Promise<(number | undefined)[]> {
  const ids = reservationIdsOf(members);
  const freed = new Map<string, number>();
  if (ids.length > 0) {
    for (const row of await runner.rows(dropReservations(ids.length), ids))
      freed.set(String(row.id), Number(row.images));
  }
  return members.map((member) => {
    const id = member.fence.reservationId;
    if (id === undefined) return undefined;
    const images = freed.get(id) ?? GONE;
    // A reservation is freed once: a second member naming it finds it gone, as it would alone.
    freed.delete(id);
    return images;
  });
}

/**
 * Ends the members' Idempotency-Key claims: published with the result when billed, forgotten
 * otherwise. A member whose claim is no longer its own (another node took it over) becomes
 * `lease-lost`.
 */
async function endClaims(runner: StatementRunner, settling: readonly Settling[]): Promise<void> {
  const claimed: { entry: Settling; claim: ClaimFence }[] = [];
  for (const entry of settling) {
    const claim = entry.member.fence.idempotency;
    if (claim !== undefined) claimed.push({ entry, claim });
  }
  const publish = claimed.filter(({ entry }) => entry.outcome === 'billed');
  const forget = claimed.filter(({ entry }) => entry.outcome !== 'billed');
  const held = new Set<string>();
  const note = (rows: readonly ResultRow[]) => {
    for (const row of rows)
      held.add(claimName(String(row.scope), String(row.idempotency_key), String(row.owner)));
  };
  if (publish.length > 0) {
    const parameters = parametersOf(publish, ({ claim }): Parameter[] => [
      claim.scope,
      claim.key,
      claim.owner,
      claim.result,
      claim.requestId,
    ]);
    note(await runner.rows(publishResults(publish.length), parameters));
  }
  if (forget.length > 0) {
    const parameters = parametersOf(forget, ({ claim }): Parameter[] => [
      claim.scope,
      claim.key,
      claim.owner,
    ]);
    note(await runner.rows(forgetClaims(forget.length), parameters));
  }
  for (const { entry, claim } of claimed) {
    if (!held.has(claimName(claim.scope, claim.key, claim.owner))) entry.outcome = 'lease-lost';
  }
}

/** The reservations the members hold, in member order (a loop: see parametersOf). */
function reservationIdsOf(members: readonly PendingSettlement[]): string[] {
  const ids: string[] = [];
  for (const member of members)
    if (member.fence.reservationId !== undefined) ids.push(member.fence.reservationId);
  return ids;
}

function claimName(scope: string, key: string, owner: string): string {
  return JSON.stringify([scope, key, owner]);
}
