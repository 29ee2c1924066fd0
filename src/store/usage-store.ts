import { type Kysely, sql } from 'kysely';
import type { UsageFilter, UsageGrouping, UsageSummary } from '../domain/usage-filter.js';
import type { UsageRow } from '../domain/usage-row.js';
import type { Database } from './database/database.js';
import type { HotStatements } from './billing/hot-statements.js';
import type { LongReads, Read } from './database/long-reads.js';
import { writeLedgerRows } from './billing/ledger-writer.js';
import type { DatabaseSchema } from './database/schema.js';
import { fromLedgerRow } from './billing/usage-rows.js';

const DAY_MS = 86_400_000;
/** Rows per read of a listing: a few milliseconds of the event loop each, to take them in. */
const LIST_PAGE_ROWS = 2000;

/** Writes and reads the usage ledger, on SQLite or PostgreSQL alike. */
export class SqlUsageStore {
  private readonly db: Kysely<DatabaseSchema>;
  private readonly statements: HotStatements;
  private readonly reportReads: LongReads;

  constructor(database: Pick<Database, 'db' | 'statements' | 'reportReads'>) {
    this.db = database.db;
    this.statements = database.statements;
    this.reportReads = database.reportReads;
  }

  /**
   * Inserts rows; a row whose id is already there is kept, so a retried batch is harmless, unless
   * it is a stand-in, which the request's own row replaces (`writeLedgerRows`).
   */
  async insert(rows: readonly UsageRow[]): Promise<void> {
    await writeLedgerRows(this.statements, this.statements.dialect, rows);
  }

  /**
   * Rows in time order, oldest first, at most `limit`. Read a page at a time, each after the last
   * row of the one before: a long listing reaches the event loop in pieces, not as one copy of
   * every row, and no page reads rows an earlier one has read. The pages share one turn of the
   * lane of reports, so a listing under way is never refused half-way.
   */
  list(filter: UsageFilter, limit: number): Promise<UsageRow[]> {
    return this.reportReads.inOneTurn((read) => this.listPages(read, filter, limit));
  }

  private async listPages(read: Read, filter: UsageFilter, limit: number): Promise<UsageRow[]> {
    const rows: UsageRow[] = [];
    let after: { createdAt: number; id: string } | undefined;
    while (rows.length < limit) {
      const pageRows = Math.min(LIST_PAGE_ROWS, limit - rows.length);
      let query = this.filtered(filter).selectAll();
      if (after !== undefined) {
        const { createdAt, id } = after;
        query = query
          .where('created_at', '>=', createdAt)
          .where((eb) => eb.or([eb('created_at', '>', createdAt), eb('id', '>', id)]));
      }
      const page = await read(query.orderBy('created_at').orderBy('id').limit(pageRows));
      for (const row of page) rows.push(fromLedgerRow(row));
      const last = page.at(-1);
      if (page.length < pageRows || last === undefined) break;
      after = { createdAt: Number(last.created_at), id: last.id };
    }
    return rows;
  }

  /** One summary per group, in key order; without a grouping, one summary with key `total`. */
  async summarize(filter: UsageFilter, grouping?: UsageGrouping): Promise<UsageSummary[]> {
    const key =
      grouping === 'day'
        ? sql<string>`created_at / ${sql.lit(DAY_MS)}`
        : grouping === 'model'
          ? sql<string>`coalesce(model, '-')`
          : grouping === 'token'
            ? sql<string>`coalesce(token_id, '-')`
            : sql<string>`'total'`;
    const query = this.filtered(filter).select((eb) => [
      key.as('key'),
      eb.fn.countAll().as('requests'),
      sql<number>`sum(case when status = 200 then 1 else 0 end)`.as('succeeded'),
      eb.fn.sum('images_requested').as('images_requested'),
      eb.fn.sum('images_received').as('images_received'),
      eb.fn.sum('images_delivered').as('images_delivered'),
      eb.fn.sum('images_billed').as('images_billed'),
      eb.fn.sum('cost_micros').as('cost_micros'),
    ]);
    const rows = await this.reportReads.all(
      grouping === undefined ? query : query.groupBy(sql`1`).orderBy(sql`1`),
    );
    return rows.map((row) => {
      const requests = Number(row.requests);
      const succeeded = Number(row.succeeded ?? 0);
      return {
        key: grouping === 'day' ? dayOf(Number(row.key)) : String(row.key),
        requests,
        succeeded,
        failed: requests - succeeded,
        imagesRequested: Number(row.images_requested ?? 0),
        imagesReceived: Number(row.images_received ?? 0),
        imagesDelivered: Number(row.images_delivered ?? 0),
        imagesBilled: Number(row.images_billed ?? 0),
        costMicros: Number(row.cost_micros ?? 0),
      };
    });
  }

  private filtered(filter: UsageFilter) {
    let query = this.db.selectFrom('usage_ledger');
    if (filter.since !== undefined) query = query.where('created_at', '>=', filter.since);
    if (filter.until !== undefined) query = query.where('created_at', '<', filter.until);
    if (filter.tokenId !== undefined) query = query.where('token_id', '=', filter.tokenId);
    if (filter.account !== undefined) query = query.where('account', '=', filter.account);
    if (filter.requestId !== undefined) query = query.where('request_id', '=', filter.requestId);
    return query;
  }
}

function dayOf(dayNumber: number): string {
  return new Date(dayNumber * DAY_MS).toISOString().slice(0, 10);
}
