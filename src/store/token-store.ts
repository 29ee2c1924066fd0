import type { Kysely } from 'kysely';
import type { DatabaseSchema, TokensTable } from './database/schema.js';

export interface TokenRecord {
  id: string;
  name: string;
  account: string;
  createdAt: number;
  expiresAt: number | undefined;
  revokedAt: number | undefined;
  admin: boolean;
}

/** Which tokens a page lists, oldest first, from just after `after` (a token's creation and id). */
export interface TokenPageQuery {
  account?: string | undefined;
  name?: string | undefined;
  revoked?: boolean | undefined;
  after?: { createdAt: number; id: string } | undefined;
  limit: number;
}

export interface TokenStore {
  insert(record: TokenRecord): Promise<void>;
  find(id: string): Promise<TokenRecord | undefined>;
  list(): Promise<TokenRecord[]>;
  page(query: TokenPageQuery): Promise<TokenRecord[]>;
  /** Renames the token; false when there is no such token. */
  rename(id: string, name: string): Promise<boolean>;
  /** Marks the token revoked; false when there is no such token. Revoking twice keeps the first time. */
  revoke(id: string, at: number): Promise<boolean>;
}

/** The token store on SQLite or PostgreSQL: the same queries serve both. */
export class SqlTokenStore implements TokenStore {
  constructor(private readonly db: Kysely<DatabaseSchema>) {}

  async insert(record: TokenRecord): Promise<void> {
    await this.db
      .insertInto('tokens')
      .values({
        id: record.id,
        name: record.name,
        account: record.account,
        created_at: record.createdAt,
        expires_at: record.expiresAt ?? null,
        revoked_at: record.revokedAt ?? null,
        is_admin: record.admin ? 1 : 0,
      })
      .execute();
  }

  async find(id: string): Promise<TokenRecord | undefined> {
    const row = await this.db
      .selectFrom('tokens')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirst();
    return row === undefined ? undefined : fromRow(row);
  }

  async list(): Promise<TokenRecord[]> {
    const rows = await this.db
      .selectFrom('tokens')
      .selectAll()
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(fromRow);
  }

  async page(query: TokenPageQuery): Promise<TokenRecord[]> {
    let select = this.db.selectFrom('tokens').selectAll();
    if (query.account !== undefined) select = select.where('account', '=', query.account);
    if (query.name !== undefined) select = select.where('name', '=', query.name);
    if (query.revoked !== undefined)
      select = select.where('revoked_at', query.revoked ? 'is not' : 'is', null);
    const after = query.after;
    if (after !== undefined)
      select = select.where((row) =>
        row.or([
          row('created_at', '>', after.createdAt),
          row.and([row('created_at', '=', after.createdAt), row('id', '>', after.id)]),
        ]),
      );
    const rows = await select.orderBy('created_at').orderBy('id').limit(query.limit).execute();
    return rows.map(fromRow);
  }

  async rename(id: string, name: string): Promise<boolean> {
    const result = await this.db
      .updateTable('tokens')
      .set({ name })
      .where('id', '=', id)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async revoke(id: string, at: number): Promise<boolean> {
    const existing = await this.find(id);
    if (existing === undefined) return false;
    await this.db
      .updateTable('tokens')
      .set({ revoked_at: at })
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .execute();
    return true;
  }
}

function fromRow(row: TokensTable): TokenRecord {
  return {
    id: row.id,
    name: row.name,
    account: row.account,
    createdAt: Number(row.created_at),
    expiresAt: row.expires_at === null ? undefined : Number(row.expires_at),
    revokedAt: row.revoked_at === null ? undefined : Number(row.revoked_at),
    admin: row.is_admin === 1,
  };
}
