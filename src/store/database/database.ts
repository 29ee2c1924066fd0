import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, sql } from 'kysely';
import pg from 'pg';
import { CurrentSchemaPostgresDialect } from '../migrations/current-schema-introspector.js';
import { migrateToLatest } from '../migrations/migrations.js';
import type { DatabaseLimits } from '../../config/config.js';
import type { DatabaseSchema } from './schema.js';
import {
  type HotStatements,
  PostgresStatements,
  SqliteStatements,
} from '../billing/hot-statements.js';
import { discardingUnanswered } from './unanswered-statements.js';
import { ImmediateSqliteDialect } from '../sqlite/immediate-sqlite-dialect.js';
import { InlineReads, type LongReads } from './long-reads.js';
import { QueuedReads, type ReadLane } from './queued-reads.js';
import { SqliteWorkerReads } from '../sqlite/sqlite-worker-reads.js';
import { WalCheckpointer } from '../sqlite/wal-checkpointer.js';
import { WAL_FILE_LIMIT_BYTES } from '../sqlite/wal-limits.js';
import { type Log, silentLog } from '../../support/log.js';

export type DatabaseTarget =
  | { kind: 'sqlite'; file: string }
  /** `schema` puts every table in one PostgreSQL schema; tests use it to stay apart. */
  | { kind: 'postgres'; url: string; schema?: string };

/** The defaults of the IMAGEGATE_DB_* settings, for callers without a configuration. */
export const DEFAULT_DATABASE_LIMITS: DatabaseLimits = {
  poolSize: 10,
  acquireTimeoutMs: 2000,
  statementTimeoutMs: 5000,
  lockTimeoutMs: 2000,
  idleInTransactionTimeoutMs: 5000,
};

/** How much later than the server's own statement time-out the client stops waiting. */
const CLIENT_TIMEOUT_MARGIN_MS = 1000;

export interface DatabaseOptions {
  limits?: DatabaseLimits;
  /** Where a pooled connection's failure outside any query is reported (a restart, a kill). */
  log?: Log;
  /**
   * SQLite only. `background`: the server's choice, worker threads checkpoint the write-ahead log
   * (see WalCheckpointer) and run the long reads (see SqliteWorkerReads), each on a connection of
   * its own. `inline` (default): both on the one connection, fine for the CLI.
   */
  sqliteWork?: 'background' | 'inline';
}

/** How often the background checkpoint runs: the log stays within about a second of writes. */
const WAL_CHECKPOINT_INTERVAL_MS = 1000;

export interface Database {
  readonly kind: DatabaseTarget['kind'];
  /** Every query of the cold paths: the CLI, admin routes, usage queries, migrations, sweeps. */
  readonly db: Kysely<DatabaseSchema>;
  /** The request path's statements, built once (reservations, settlements, ledger, keys). */
  readonly statements: HotStatements;
  /** Usage reports, which may scan the whole ledger: an admin's. */
  readonly reportReads: LongReads;
  /**
   * Task listings, which may read a caller's whole day: any caller's. A lane apart from the
   * reports', so that a caller's listing never waits behind an admin's report.
   */
  readonly listingReads: LongReads;
  ping(): Promise<void>;
  close(): Promise<void>;
}

const INT8_OID = 20;

/** An admin's reports, one at a time: a few at once is already a queue of seconds. */
const REPORT_LANE: ReadLane = { busy: 'usage reports are busy', running: 1, waiting: 8 };
/**
 * Callers' task listings (two reads each, a page and its count): each takes milliseconds, and a
 * caller has at most two under way (TaskService), so a full lane means many callers at once. One
 * runs at a time on SQLite's read thread; on PostgreSQL a quarter of the pool (at least one), so
 * that from a pool of three connections up the request path always finds one.
 */
const LISTING_LANE: ReadLane = { busy: 'task listings are busy', running: 1, waiting: 32 };

/** Opens the database, creating the SQLite file or the PostgreSQL schema, and migrates it. */
export async function openDatabase(
  target: DatabaseTarget,
  options: DatabaseOptions = {},
): Promise<Database> {
  const limits = options.limits ?? DEFAULT_DATABASE_LIMITS;
  const log = options.log ?? silentLog;
  const { db, statements, reportReads, listingReads, checkpointer } =
    target.kind === 'sqlite'
      ? await openSqlite(target.file, limits, log, options.sqliteWork ?? 'inline')
      : await openPostgres(target, limits, log);
  try {
    const schema =
      target.kind === 'postgres'
        ? (await sql<{ schema: string }>`select current_schema() as schema`.execute(db)).rows[0]
            ?.schema
        : undefined;
    await migrateToLatest(db as Kysely<unknown>, schema);
  } catch (error) {
    await Promise.all([reportReads.close(), listingReads.close()]);
    await db.destroy();
    throw error;
  }
  checkpointer?.start();
  return {
    kind: target.kind,
    db,
    statements,
    reportReads,
    listingReads,
    ping: async () => {
      await sql`select 1`.execute(db);
    },
    close: async () => {
      try {
        await Promise.all([reportReads.close(), listingReads.close()]);
      } finally {
        try {
          await checkpointer?.stop();
        } finally {
          await db.destroy();
        }
      }
    },
  };
}

interface Opened {
  db: Kysely<DatabaseSchema>;
  statements: HotStatements;
  reportReads: LongReads;
  listingReads: LongReads;
  checkpointer?: WalCheckpointer;
}

async function openSqlite(
  file: string,
  limits: DatabaseLimits,
  log: Log,
  work: 'background' | 'inline',
): Promise<Opened> {
  if (file !== ':memory:') await mkdir(path.dirname(file), { recursive: true });
  const connection = new SQLite(file);
  // WAL lets the CLI write while the server reads; the busy timeout covers the rare overlap.
  connection.pragma('journal_mode = WAL');
  connection.pragma(`busy_timeout = ${Math.max(limits.lockTimeoutMs, 1)}`);
  connection.pragma('synchronous = NORMAL');
  connection.pragma(`journal_size_limit = ${WAL_FILE_LIMIT_BYTES}`);
  // Statement journals and sorts in memory: otherwise SQLite creates, writes and unlinks files
  // under /var/tmp on the event loop (a multi-row insert inside a transaction needs one).
  connection.pragma('temp_store = MEMORY');
  const db = new Kysely<DatabaseSchema>({
    dialect: new ImmediateSqliteDialect({ database: connection }),
  });
  // An in-memory database has one connection, and no file for another to open.
  const background = work === 'background' && file !== ':memory:';
  const checkpointer = background
    ? new WalCheckpointer(path.resolve(file), connection, {
        intervalMs: WAL_CHECKPOINT_INTERVAL_MS,
        log,
      })
    : undefined;
  return {
    db,
    statements: new SqliteStatements(db, connection),
    reportReads: background
      ? new QueuedReads(new SqliteWorkerReads(path.resolve(file), log), REPORT_LANE)
      : new InlineReads(db),
    listingReads: background
      ? new QueuedReads(new SqliteWorkerReads(path.resolve(file), log), LISTING_LANE)
      : new InlineReads(db),
    checkpointer,
  };
}

async function openPostgres(
  target: { url: string; schema?: string },
  limits: DatabaseLimits,
  log: Log,
): Promise<Opened> {
  const types = {
    // Times are stored as bigint milliseconds, which fit a JS number exactly.
    getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
      oid === INT8_OID
        ? (value: string) => Number(value)
        : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
  };
  if (target.schema !== undefined) {
    const client = new pg.Client({
      connectionString: target.url,
      connectionTimeoutMillis: limits.acquireTimeoutMs,
    });
    await client.connect();
    try {
      await client.query(`create schema if not exists "${target.schema.replace(/"/g, '""')}"`);
    } finally {
      await client.end();
    }
  }
  const settings = [
    ...(target.schema === undefined ? [] : [`search_path=${target.schema}`]),
    `statement_timeout=${limits.statementTimeoutMs}`,
    `lock_timeout=${limits.lockTimeoutMs}`,
    `idle_in_transaction_session_timeout=${limits.idleInTransactionTimeoutMs}`,
  ];
  // Settings in the URL's own `options` would replace these; they are kept, ours follow.
  const url = new URL(target.url);
  const urlOptions = url.searchParams.get('options');
  url.searchParams.delete('options');
  const pool = new pg.Pool({
    connectionString: url.toString(),
    types,
    max: limits.poolSize,
    connectionTimeoutMillis: limits.acquireTimeoutMs,
    query_timeout: limits.statementTimeoutMs + CLIENT_TIMEOUT_MARGIN_MS,
    keepAlive: true,
    options: [urlOptions ?? '', ...settings.map((setting) => `-c ${setting}`)].join(' ').trim(),
  });
  // An idle pooled connection that the server ends (a restart, pg_terminate_backend) emits
  // 'error' on the pool; unhandled, that would end the process. The pool drops the connection
  // and opens a new one when next needed.
  pool.on('error', (error: Error) =>
    log.warn({ err: error.message }, 'a pooled database connection failed; it was dropped'),
  );
  // A connection in use (by a query or a transaction) has no pool listener, and its 'error' event
  // would end the process just the same. Its failure reaches its query (or its next one, as "not
  // queryable"), and the pool drops it when it is released.
  pool.on('connect', (client) => client.on('error', () => undefined));
  const db = new Kysely<DatabaseSchema>({
    dialect: new CurrentSchemaPostgresDialect({ pool: discardingUnanswered(pool) }),
  });
  return {
    db,
    statements: new PostgresStatements(db),
    reportReads: new QueuedReads(new InlineReads(db), REPORT_LANE),
    listingReads: new QueuedReads(
      new InlineReads(db),
      Object.assign({}, LISTING_LANE, { running: Math.max(1, Math.floor(limits.poolSize / 4)) }),
    ),
  };
}
