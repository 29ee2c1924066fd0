import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { AdminChange } from '../domain/admin-change.js';
import type { AdminChangesTable, DatabaseSchema } from './database/schema.js';

/** The durable record of admin changes to tokens, on SQLite or PostgreSQL alike. */
export class SqlAdminChangeStore {
  constructor(private readonly db: Kysely<DatabaseSchema>) {}

  async record(change: AdminChange): Promise<void> {
    await this.db
      .insertInto('admin_changes')
      .values({
        id: randomUUID(),
        at: change.at,
        actor: change.actor,
        action: change.action,
        token_id: change.tokenId,
        fields: change.fields.join(','),
      })
      .execute();
  }

  /** The changes to one token, or to every token, newest first. */
  async list(tokenId: string | undefined, limit: number): Promise<AdminChange[]> {
    let select = this.db.selectFrom('admin_changes').selectAll();
    if (tokenId !== undefined) select = select.where('token_id', '=', tokenId);
    const rows = await select.orderBy('at', 'desc').orderBy('id').limit(limit).execute();
    return rows.map(fromRow);
  }
}

function fromRow(row: AdminChangesTable): AdminChange {
  return {
    actor: row.actor,
    action: row.action as AdminChange['action'],
    tokenId: row.token_id,
    fields: row.fields === '' ? [] : row.fields.split(','),
    at: Number(row.at),
  };
}
