import type { Transaction } from 'kysely';
import type { DatabaseSchema } from '../database/schema.js';

/** An Idempotency-Key claim as the store names it. */
export interface HeldClaim {
  scope: string;
  key: string;
  owner: string;
}

/**
 * Ends the Idempotency-Key claim a request runs under, inside the caller's transaction: published
 * with `publish.result` under `publish.requestId`, or forgotten when `publish` is undefined (a
 * repeat then runs again). False when the claim is no longer this request's: another node took it
 * over after its lease lapsed.
 */
export async function endClaim(
  trx: Transaction<DatabaseSchema>,
  claim: HeldClaim,
  publish: { result: string; requestId: string } | undefined,
): Promise<boolean> {
  const result =
    publish !== undefined
      ? await trx
          .updateTable('idempotency_keys')
          .set({
            state: 'done',
            status: 200,
            result: publish.result,
            request_id: publish.requestId,
          })
          .where('scope', '=', claim.scope)
          .where('idempotency_key', '=', claim.key)
          .where('owner', '=', claim.owner)
          .where('state', '=', 'running')
          .executeTakeFirst()
          .then((done) => done.numUpdatedRows)
      : await trx
          .deleteFrom('idempotency_keys')
          .where('scope', '=', claim.scope)
          .where('idempotency_key', '=', claim.key)
          .where('owner', '=', claim.owner)
          .where('state', '=', 'running')
          .executeTakeFirst()
          .then((gone) => gone.numDeletedRows);
  return result > 0n;
}

/**
 * Forgets the result `requestId` published under an Idempotency-Key, inside the caller's
 * transaction, when what it names is void (a task canceled before its id reached the caller): a
 * repeat of the request then runs again.
 */
export async function forgetPublished(
  trx: Transaction<DatabaseSchema>,
  claim: HeldClaim,
  requestId: string,
): Promise<void> {
  await trx
    .deleteFrom('idempotency_keys')
    .where('scope', '=', claim.scope)
    .where('idempotency_key', '=', claim.key)
    .where('owner', '=', claim.owner)
    .where('state', '=', 'done')
    .where('request_id', '=', requestId)
    .execute();
}
