import {
  type Parameter,
  parametersOf,
  placeholderRows,
  Statement,
  type StatementRunner,
  statementsByCount,
} from './hot-statements.js';
import type { PendingReservation } from './quota-types.js';
import { jsonParameter } from '../database/json-parameter.js';
import { tokensLockedInIdOrder } from './token-locks.js';

/** Holds images against a token's quota when they fit: settled plus held plus these. */
const holdIfRoom = new Statement(
  `update tokens set images_reserved = images_reserved + ?
   where id = ? and (image_quota is null or images_used + images_reserved + ? <= image_quota)`,
);

/** The columns of a reservation's row, in the order `reservationParameters` gives them. */
const RESERVATION_COLUMNS = 'id, token_id, images, created_at, expires_at, ledger_row';

const insertReservations = statementsByCount(
  (count) =>
    `insert into quota_reservations (${RESERVATION_COLUMNS}) values ${placeholderRows(count, 6)}`,
);

/**
 * PostgreSQL only (SQLite has no data-modifying WITH): holds the images of a group against the
 * quotas of its members' tokens and records their reservations, in one statement when every
 * token has room for its members together. One round trip, atomic as any statement, instead of
 * BEGIN, an UPDATE per token, INSERT and COMMIT. The tokens' rows are locked first, in the order
 * of their ids, and whether every token has room is read from the locked rows; the hold and the
 * records apply only then, and the statement answers whether they did: when one token has no
 * room, nothing changes. Every group size shares the one prepared text: holds and reservations
 * are each one JSON parameter.
 */
const holdAndRecord = new Statement(
  `with holds as (
     select token_id, images from jsonb_to_recordset(?::jsonb) as hold (token_id varchar, images integer)),
   ${tokensLockedInIdOrder('select token_id from holds', 'id, image_quota, images_used, images_reserved')},
   whole as materialized (
     select count(*) = ?::integer as applies from holds join locked on locked.id = holds.token_id
     where locked.image_quota is null
        or locked.images_used + locked.images_reserved + holds.images <= locked.image_quota),
   held as (
     update tokens set images_reserved = tokens.images_reserved + holds.images
     from holds join locked on locked.id = holds.token_id
     where tokens.id = locked.id and (select applies from whole)),
   recorded as (
     insert into quota_reservations (${RESERVATION_COLUMNS})
     select ${RESERVATION_COLUMNS} from json_populate_recordset(null::quota_reservations, ?::json)
     where (select applies from whole))
   select applies from whole`,
);

/**
 * `members` all held at once, outside any transaction, by one statement on PostgreSQL; undefined
 * when they do not all fit, and the group must go through `reserveTogether`, which tries them
 * one by one. Nothing is held then.
 */
export async function reserveAtOnce(
  runner: StatementRunner,
  members: readonly PendingReservation[],
): Promise<boolean[] | undefined> {
  if (members.length === 0) return [];
  const imagesByToken = new Map<string, number>();
  for (const { request } of members)
    imagesByToken.set(request.tokenId, (imagesByToken.get(request.tokenId) ?? 0) + request.images);
  const holds = [...imagesByToken].map(([tokenId, images]) => ({ token_id: tokenId, images }));
  const [answer] = await runner.rows(holdAndRecord, [
    jsonParameter(holds),
    holds.length,
    jsonParameter(members.map(reservationOf)),
  ]);
  // A token had no room for its members together: nothing was held.
  if (answer?.applies !== true) return undefined;
  return members.map(() => true);
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

/** A member's reservation row, keyed by column. */
function reservationOf({ request, now, expiresAt }: PendingReservation) {
  return {
    id: request.id,
    token_id: request.tokenId,
    images: request.images,
    created_at: now,
    expires_at: expiresAt,
    ledger_row: request.abandonedRow === undefined ? null : JSON.stringify(request.abandonedRow),
  };
}

/** The columns of each member's reservation row, in the order of `RESERVATION_COLUMNS`. */
function reservationParameters(members: readonly PendingReservation[]): Parameter[] {
  return parametersOf(members, (member): Parameter[] => Object.values(reservationOf(member)));
}
