import type { Kysely } from 'kysely';
import type { DatabaseSchema } from './database/schema.js';

/** One bound an upload is counted against: a token's window or a certificate. */
export interface UploadBound {
  /** `token:<token id>:<window start>` or `certificate:<upload_dir>`. */
  scope: string;
  maxBytes: number;
  maxFiles: number;
  /** When the bound ends: after it, its row is deleted. */
  expiresAt: number;
}

/** Thrown inside the charge's transaction to undo it: `bound` had no room. */
class NoRoom extends Error {
  constructor(readonly bound: UploadBound) {
    super(`no room under ${bound.scope}`);
  }
}

/**
 * Upload bytes and files counted per bound, on SQLite or PostgreSQL alike. A charge is one
 * transaction of one guarded upsert per bound: the row's lock makes concurrent charges, from any
 * node, wait for each other and see each other's counts, so no bound is ever passed.
 */
export class SqlUploadUsageStore {
  constructor(private readonly db: Kysely<DatabaseSchema>) {}

  /**
   * Counts one file of `bytes` against every bound, or against none: answers the first bound
   * that has no room for it, undefined when it was counted.
   */
  async charge(bounds: readonly UploadBound[], bytes: number): Promise<UploadBound | undefined> {
    const tooLarge = bounds.find((bound) => bytes > bound.maxBytes || bound.maxFiles < 1);
    if (tooLarge !== undefined) return tooLarge;
    try {
      await this.db.transaction().execute(async (trx) => {
        for (const bound of bounds) {
          const counted = await trx
            .insertInto('upload_usage')
            .values({ scope: bound.scope, bytes, files: 1, expires_at: bound.expiresAt })
            .onConflict((conflict) =>
              conflict
                .column('scope')
                .doUpdateSet((eb) => ({
                  bytes: eb('upload_usage.bytes', '+', bytes),
                  files: eb('upload_usage.files', '+', 1),
                }))
                .where((eb) =>
                  eb.and([
                    eb(eb('upload_usage.bytes', '+', bytes), '<=', bound.maxBytes),
                    eb(eb('upload_usage.files', '+', 1), '<=', bound.maxFiles),
                  ]),
                ),
            )
            .returning('scope')
            .executeTakeFirst();
          if (counted === undefined) throw new NoRoom(bound);
        }
      });
    } catch (error) {
      if (error instanceof NoRoom) return error.bound;
      throw error;
    }
    return undefined;
  }

  /** Takes back one file of `bytes` from the bounds it was charged to (it was not stored). */
  async refund(scopes: readonly string[], bytes: number): Promise<void> {
    await this.db
      .updateTable('upload_usage')
      .set((eb) => ({
        bytes: eb('bytes', '-', bytes),
        files: eb('files', '-', 1),
      }))
      .where('scope', 'in', scopes)
      .execute();
  }

  /** Deletes at most `limit` rows whose bound has ended; returns how many. */
  async deleteExpired(now: number, limit: number): Promise<number> {
    const result = await this.db
      .deleteFrom('upload_usage')
      .where('expires_at', '<=', now)
      .where('scope', 'in', (eb) =>
        eb.selectFrom('upload_usage').select('scope').where('expires_at', '<=', now).limit(limit),
      )
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /** What has been counted under `scope` (tests and diagnostics). */
  async usage(scope: string): Promise<{ bytes: number; files: number } | undefined> {
    const row = await this.db
      .selectFrom('upload_usage')
      .select(['bytes', 'files'])
      .where('scope', '=', scope)
      .executeTakeFirst();
    return row === undefined ? undefined : { bytes: Number(row.bytes), files: Number(row.files) };
  }
}
