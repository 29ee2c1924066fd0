import {
  type Parameter,
  parametersOf,
  placeholderRows,
  Statement,
  type StatementRunner,
  statementsByCount,
} from './hot-statements.js';
import type { PendingReservation } from './quota-types.js';

/** Holds images against a token's quota when they fit: settled plus held plus these. */
const holdIfRoom = new Statement(
  `update tokens set images_reserved = images_reserved + ?
   where id = ? and (image_quota is null or images_used + images_reserved + ? <= image_quota)`,
);

const insertReservations = statementsByCount(
  (count) =>
    `insert into quota_reservations (id, token_id, images, created_at, expires_at, ledger_row) values ${placeholderRows(count, 6)}`,
);

/**
 * PostgreSQL only (SQLite has no data-modifying WITH): holds the images of a group whose members
 * all reserve against one token, and records their reservations, in one statement when they fit
 * together. One round trip, atomic as any statement, instead of BEGIN, UPDATE, INSERT and COMMIT.
 * The UPDATE runs whether or not the INSERT reads it; the INSERT adds rows only if it held.
 */
const holdAndRecord = statementsByCount(
  (count) =>
    `with held as (
       update tokens set images_reserved = images_reserved + ?
       where id = ? and (image_quota is null or images_used + images_reserved + ? <= image_quota)
       returning id)
     insert into quota_reservations (id, token_id, images, created_at, expires_at, ledger_row)
     select id, token_id, images, created_at, expires_at, ledger_row
     from (values ${Array.from({ length: count }, () => '(?::varchar, ?::varchar, ?::integer, ?::bigint, ?::bigint, ?::text)').join(', ')})
       as reserved (id, token_id, images, created_at, expires_at, ledger_row)
     where exists (select 1 from held)`,
);

/**
 * `members` all held at once, outside any transaction, by one statement on PostgreSQL; undefined
 * when that does not apply (several tokens in the group) or they do not all fit, and the group
 * must go through `reserveTogether`, which tries them one by one. Nothing is held then.
 */
export async function reserveAtOnce(
  runner: StatementRunner,
  members: readonly PendingReservation[],
): Promise<boolean[] | undefined> {
  const tokenId = members[0]?.request.tokenId;
  if (tokenId === undefined || members.some((member) => member.request.tokenId !== tokenId))
    return undefined;
  const total = members.reduce((sum, member) => sum + member.request.images, 0);
  const recorded = await runner.run(holdAndRecord(members.length), [
    total,
    tokenId,
    total,
    ...reservationParameters(members),
  ]);
  return recorded === members.length ? members.map(() => true) : undefined;
}

/**
 * Reserves for `members` in the one transaction `runner` is in. Per token, the images of all its
 * members are held with one UPDATE when they fit together; when they do not (the quota is nearly
 * spent), each member is tried alone, in order, as if they had come one after the other. One
 * INSERT then records every reservation held. Resolves with whether each member is held.
 */
export async function reserveTogether(
  runner: StatementRunner,
  members: readonly PendingReservation[],
): Promise<boolean[]> {
  const byToken = new Map<string, PendingReservation[]>();
  for (const member of members) {
    const sharing = byToken.get(member.request.tokenId);
    if (sharing === undefined) byToken.set(member.request.tokenId, [member]);
    else sharing.push(member);
  }
  const held = new Set<PendingReservation>();
  // A fixed order keeps two nodes from locking the same tokens in opposite orders.
  for (const tokenId of [...byToken.keys()].sort()) {
    const sharing = byToken.get(tokenId) ?? [];
    const total = sharing.reduce((sum, member) => sum + member.request.images, 0);
    if ((await runner.run(holdIfRoom, [total, tokenId, total])) > 0) {
      for (const member of sharing) held.add(member);
      continue;
    }
    if (sharing.length === 1) continue;
    for (const member of sharing) {
      const images = member.request.images;
      if ((await runner.run(holdIfRoom, [images, tokenId, images])) > 0) held.add(member);
    }
  }
  const rows = members.filter((member) => held.has(member));
  if (rows.length > 0)
    await runner.run(insertReservations(rows.length), reservationParameters(rows));
  return members.map((member) => held.has(member));
}

/** The columns of each member's reservation row, in the order both INSERTs take them. */
function reservationParameters(members: readonly PendingReservation[]): Parameter[] {
  return parametersOf(members, ({ request, now, expiresAt }): Parameter[] => [
    request.id,
    request.tokenId,
    request.images,
    now,
    expiresAt,
    request.abandonedRow === undefined ? null : JSON.stringify(request.abandonedRow),
  ]);
}
