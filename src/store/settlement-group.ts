import {
  type Parameter,
  type ResultRow,
  placeholderRows,
  placeholders,
  Statement,
  type StatementRunner,
  statementsByCount,
} from './hot-statements.js';
import { ledgerParameters, upsertLedgerRows } from './ledger-statements.js';
import type { PendingSettlement, SettlementOutcome } from './quota-types.js';

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
 * Settles `members` in the one transaction `runner` is in, with a statement per kind of change
 * rather than per request: one DELETE frees every reservation, one UPDATE publishes every result
 * and one DELETE forgets every key left unpublished, one UPDATE per token charges it, one INSERT
 * writes every ledger row. Each member keeps exactly the fences of a settlement of its own: a
 * reservation that is gone or a claim no longer its own bills nothing (`lease-lost`), a caller
 * gone by now bills nothing (`caller-gone`), and its row is built here, inside the transaction.
 */
export async function settleTogether(
  runner: StatementRunner,
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
    if (outcome === 'billed')
      charge.billed += Math.max(
        0,
        (rows[index]?.imagesBilled ?? 0) - (member.fence.alreadyBilled ?? 0),
      );
    charges.set(member.tokenId, charge);
  });
  // A fixed order keeps two nodes from locking the same tokens in opposite orders.
  for (const tokenId of [...charges.keys()].sort()) {
    const charge = charges.get(tokenId);
    if (charge === undefined || (charge.reserved === 0 && charge.billed === 0)) continue;
    await runner.run(chargeToken, [charge.reserved, charge.billed, tokenId]);
  }
  // A request whose reservation was reclaimed replaces the stand-in row left for it.
  await runner.run(upsertLedgerRows(rows.length), ledgerParameters(rows));
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
  const ids = members.flatMap((member) =>
    member.fence.reservationId === undefined ? [] : [member.fence.reservationId],
  );
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
  const claimed = settling.flatMap((entry) =>
    entry.member.fence.idempotency === undefined
      ? []
      : [{ entry, claim: entry.member.fence.idempotency }],
  );
  const publish = claimed.filter(({ entry }) => entry.outcome === 'billed');
  const forget = claimed.filter(({ entry }) => entry.outcome !== 'billed');
  const held = new Set<string>();
  const note = (rows: readonly ResultRow[]) => {
    for (const row of rows)
      held.add(claimName(String(row.scope), String(row.idempotency_key), String(row.owner)));
  };
  if (publish.length > 0) {
    const parameters = publish.flatMap(({ claim }): Parameter[] => [
      claim.scope,
      claim.key,
      claim.owner,
      claim.result,
      claim.requestId,
    ]);
    note(await runner.rows(publishResults(publish.length), parameters));
  }
  if (forget.length > 0) {
    const parameters = forget.flatMap(({ claim }): Parameter[] => [
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

function claimName(scope: string, key: string, owner: string): string {
  return JSON.stringify([scope, key, owner]);
}
