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
import { writeLedgerRows } from './ledger-writer.js';
import type { UsageRow } from '../../domain/usage-row.js';
import type { ClaimFence, PendingSettlement, Settled } from './quota-types.js';
import { settledRow } from './settled-row.js';
import { fitsOneStatement, settleAtOnce } from './settlement-at-once.js';
import {
  callerGone,
  endedAt,
  type FencesFound,
  newlyBilled,
  outcomeOf,
} from './settlement-decision.js';
import { completeTask } from '../task-store.js';

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
 * Settles a group of requests, each by its plan, in one of two forms of the same settlement: on
 * PostgreSQL, a group whose fences are all reservations and callers is tried as one statement
 * (`settleAtOnce`); any other group, or one that statement did not apply to, in one transaction
 * (`settleTogether`).
 */
export async function settleGroup(
  statements: HotStatements,
  members: readonly PendingSettlement[],
): Promise<Settled[]> {
  if (statements.dialect === 'postgres' && fitsOneStatement(members)) {
    const settled = await settleAtOnce(statements, members);
    if (settled !== undefined) return settled;
  }
  return statements.transaction((runner) => settleTogether(runner, statements.dialect, members));
}

/**
 * Settles `members` in the one transaction `runner` is in, with a statement per kind of change
 * rather than per request: one DELETE frees every reservation, one UPDATE per task ends it, one
 * UPDATE publishes every result and one DELETE forgets every key left unpublished, one UPDATE per
 * token charges it, one INSERT writes every ledger row. Each member keeps exactly the fences of a
 * settlement of its own: a reservation that is gone, a task or a claim no longer its own bills
 * nothing (`lease-lost`), a caller gone by now bills nothing (`caller-gone`), and its row is
 * built here, inside the transaction. A task's settlement that bills nothing writes no row: the
 * task's row is written by whoever ends it, under that ending's own condition.
 */
async function settleTogether(
  runner: StatementRunner,
  dialect: HotStatements['dialect'],
  members: readonly PendingSettlement[],
): Promise<Settled[]> {
  const reserved = await dropHeld(runner, members);
  const settling = members.map((member, index): Settling => {
    const held = reserved[index];
    return {
      member,
      reserved: held === GONE ? 0 : (held ?? 0),
      // The caller is read after the reservation's lock was waited for.
      found: { reservationHeld: held !== GONE, callerGone: callerGone(member.plan) },
    };
  });
  for (const entry of settling) {
    const { task } = entry.member.plan;
    if (task !== undefined && outcomeOf(entry.found) === 'billed')
      entry.found.taskKept = await completeTask(runner, task);
  }
  await endClaims(runner, settling);

  const settled = settling.map(({ member, found }): Settled => {
    const outcome = outcomeOf(found);
    return { outcome, row: settledRow(member.plan, outcome, endedAt(member)) };
  });
  const charges = new Map<string, { reserved: number; billed: number }>();
  settling.forEach(({ member: { plan }, reserved: held }, index) => {
    if (plan.tokenId === undefined) return;
    const charge = charges.get(plan.tokenId) ?? { reserved: 0, billed: 0 };
    const { outcome, row } = settled[index] as Settled;
    charge.reserved += held;
    charge.billed += newlyBilled(plan, outcome, row);
    charges.set(plan.tokenId, charge);
  });
  // A fixed order keeps two nodes from locking the same tokens in opposite orders.
  for (const tokenId of [...charges.keys()].sort()) {
    const charge = charges.get(tokenId);
    if (charge === undefined || (charge.reserved === 0 && charge.billed === 0)) continue;
    await runner.run(chargeToken, [charge.reserved, charge.billed, tokenId]);
  }
  const rows: UsageRow[] = [];
  settled.forEach(({ outcome, row }, index) => {
    if (outcome === 'billed' || members[index]?.plan.task === undefined) rows.push(row);
  });
  // A request whose reservation was reclaimed replaces the stand-in row left for it.
  await writeLedgerRows(runner, dialect, rows);
  return settled;
}

interface Settling {
  member: PendingSettlement;
  /** Images its reservation held; 0 without one, or when it was already gone. */
  reserved: number;
  found: FencesFound;
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
  const ids: string[] = [];
  for (const { plan } of members)
    if (plan.reservationId !== undefined) ids.push(plan.reservationId);
  const freed = new Map<string, number>();
  if (ids.length > 0) {
    for (const row of await runner.rows(dropReservations(ids.length), ids))
      freed.set(String(row.id), Number(row.images));
  }
  return members.map(({ plan }) => {
    const id = plan.reservationId;
    if (id === undefined) return undefined;
    const images = freed.get(id) ?? GONE;
    // A reservation is freed once: a second member naming it finds it gone, as it would alone.
    freed.delete(id);
    return images;
  });
}

/**
 * Ends the members' Idempotency-Key claims: published with the result when billed, forgotten
 * otherwise. A member whose claim is no longer its own (another node took it over) has lost it.
 */
async function endClaims(runner: StatementRunner, settling: readonly Settling[]): Promise<void> {
  const claimed: { entry: Settling; claim: ClaimFence }[] = [];
  for (const entry of settling) {
    const { claim } = entry.member.plan;
    if (claim !== undefined) claimed.push({ entry, claim });
  }
  const publish = claimed.filter(({ entry }) => outcomeOf(entry.found) === 'billed');
  const forget = claimed.filter(({ entry }) => outcomeOf(entry.found) !== 'billed');
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
  for (const { entry, claim } of claimed)
    entry.found.claimKept = held.has(claimName(claim.scope, claim.key, claim.owner));
}

function claimName(scope: string, key: string, owner: string): string {
  return JSON.stringify([scope, key, owner]);
}
