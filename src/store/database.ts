import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, PostgresDialect, sql, SqliteDialect } from 'kysely';
import pg from 'pg';
import { migrateToLatest } from './migrations.js';
import type { DatabaseSchema } from './schema.js';

export type DatabaseTarget =
  | { kind: 'sqlite'; file: string }
  /** `schema` puts every table in one PostgreSQL schema; tests use it to stay apart. */
  | { kind: 'postgres'; url: string; schema?: string };

export interface Database {
  readonly kind: DatabaseTarget['kind'];
  readonly db: Kysely<DatabaseSchema>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

const INT8_OID = 20;

/** Opens the database, creating the SQLite file or the PostgreSQL schema, and migrates it. */
export async function openDatabase(target: DatabaseTarget): Promise<Database> {
  const db = target.kind === 'sqlite' ? await openSqlite(target.file) : await openPostgres(target);
  try {
    const schema =
      target.kind === 'postgres'
        ? (await sql<{ schema: string }>`select current_schema() as schema`.execute(db)).rows[0]
            ?.schema
        : undefined;
    await migrateToLatest(db as Kysely<unknown>, schema);
  } catch (error) {
    await db.destroy();
    throw error;
  }
  return {
    kind: target.kind,
    db,
    ping: async () => {
      await sql`select 1`.execute(db);
    },
    close: () => db.destroy(),
  };
}

async function openSqlite(file: string): Promise<Kysely<DatabaseSchema>> {
  if (file !== ':memory:') await mkdir(path.dirname(file), { recursive: true });
  const connection = new SQLite(file);
  // WAL lets the CLI write while the server reads; the busy timeout covers the rare overlap.
  connection.pragma('journal_mode = WAL');
  connection.pragma('busy_timeout = 5000');
  connection.pragma('synchronous = NORMAL');
  return new Kysely<DatabaseSchema>({ dialect: new SqliteDialect({ database: connection }) });
}

async function openPostgres(target: {
  url: string;
  schema?: string;
}): Promise<Kysely<DatabaseSchema>> {
  const types = {
    // Times are stored as bigint milliseconds, which fit a JS number exactly.
    getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
      oid === INT8_OID
        ? (value: string) => Number(value)
        : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
  };
  if (target.schema !== undefined) {
    const client = new pg.Client({ connectionString: target.url });
    await client.connect();
    try {
      await client.query(`create schema if not exists "${target.schema.replace(/"/g, '""')}"`);
    } finally {
      await client.end();
    }
  }
  const pool = new pg.Pool({
    connectionString: target.url,
    types,
    max: 10,
    ...(target.schema === undefined ? {} : { options: `-c search_path=${target.schema}` }),
  });
  return new Kysely<DatabaseSchema>({ dialect: new PostgresDialect({ pool }) });
}
