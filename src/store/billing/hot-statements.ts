import type BetterSqlite3 from 'better-sqlite3';
import { CompiledQuery, type DatabaseConnection, type Kysely } from 'kysely';
import type { DatabaseSchema } from '../database/schema.js';

/**
 * One SQL statement of the request path, written once with `?` placeholders and never built
 * again: SQLite prepares it once per connection; PostgreSQL receives the same text (placeholders
 * numbered `$1`, `$2`, ...) and, when `prepared`, keeps it prepared on each connection.
 */
export class Statement {
  readonly postgres: string;

  constructor(
    readonly sqlite: string,
    prepared = true,
  ) {
    let position = 0;
    this.postgres = sqlite.replace(/\?/g, () => `$${++position}`);
    if (prepared && !preparedNames.has(this.postgres))
      preparedNames.set(this.postgres, `imagegate_hot_${preparedNames.size + 1}`);
  }
}

/** The text of every hot statement, with the name PostgreSQL prepares it under. */
const preparedNames = new Map<string, string>();

/**
 * The name under which PostgreSQL keeps `text` prepared on each connection, when it is a hot
 * statement: the server then parses and plans it once per connection rather than on every call.
 */
export function preparedNameOf(text: string): string | undefined {
  return preparedNames.get(text);
}

/**
 * The most rows a statement of `statementsByCount` is kept prepared for. A prepared statement
 * stays in the server's memory for the connection's life; one per group size would be hundreds
 * per connection, the largest with thousands of parameters, while a statement carrying more rows
 * than this already shares its parsing among that many requests.
 */
export const PREPARED_UP_TO_ROWS = 16;

/** A statement whose text depends only on how many rows it carries, built once per count. */
export function statementsByCount(build: (count: number) => string): (count: number) => Statement {
  const built = new Map<number, Statement>();
  return (count) => {
    let statement = built.get(count);
    if (statement === undefined) {
      statement = new Statement(build(count), count <= PREPARED_UP_TO_ROWS);
      built.set(count, statement);
    }
    return statement;
  };
}

/** `?, ?, ?`: `count` placeholders. */
export function placeholders(count: number): string {
  return Array.from({ length: count }, () => '?').join(', ');
}

/** `(?, ?, ?), (?, ?, ?)`: `count` rows of `width` placeholders. */
export function placeholderRows(count: number, width: number): string {
  const row = `(${placeholders(width)})`;
  return Array.from({ length: count }, () => row).join(', ');
}

export type Parameter = string | number | null;

/**
 * The values of every item, one after another: `items.flatMap(valuesOf)` without V8's flatMap,
 * which took about 4 µs per ledger row of 22 values where this loop takes 0.3 µs (Node 20).
 */
export function parametersOf<T>(
  items: readonly T[],
  valuesOf: (item: T) => readonly Parameter[],
): Parameter[] {
  const parameters: Parameter[] = [];
  for (const item of items) for (const value of valuesOf(item)) parameters.push(value);
  return parameters;
}

export type ResultRow = Readonly<Record<string, unknown>>;

export interface StatementRunner {
  /** The rows a SELECT or a statement with RETURNING gives. */
  rows(statement: Statement, parameters: Parameter[]): Promise<ResultRow[]>;
  /** How many rows the statement inserted, updated or deleted. */
  run(statement: Statement, parameters: Parameter[]): Promise<number>;
}

/** The request path's way to the database: single statements, or several in one transaction. */
export interface HotStatements extends StatementRunner {
  /** Which database runs the statements, for the few written for one of them only. */
  readonly dialect: 'sqlite' | 'postgres';
  /**
   * Runs `work` in one transaction on one connection, committed when it resolves and rolled back
   * when it throws. An error of the COMMIT itself leaves the transaction's fate unknown (the
   * connection may have broken after the server committed); `isCommitUncertain` tells.
   */
  transaction<T>(work: (runner: StatementRunner) => Promise<T>): Promise<T>;
}

const uncertainCommits = new WeakSet<object>();

/** Whether `error` was raised by a COMMIT: the transaction may have committed all the same. */
export function isCommitUncertain(error: unknown): boolean {
  return typeof error === 'object' && error !== null && uncertainCommits.has(error);
}

function commitFailed(error: unknown): unknown {
  if (typeof error === 'object' && error !== null) uncertainCommits.add(error);
  return error;
}

/**
 * SQLite: statements prepared once on the one connection and reused. Kysely's connection lock is
 * held for the whole call, so no Kysely transaction can interleave with ours; `begin immediate`
 * takes the write lock up front, as a transaction that starts with a write would.
 */
export class SqliteStatements implements HotStatements {
  readonly dialect = 'sqlite';
  private readonly prepared = new Map<Statement, BetterSqlite3.Statement<Parameter[], ResultRow>>();
  private readonly begin: BetterSqlite3.Statement;
  private readonly commit: BetterSqlite3.Statement;
  private readonly rollback: BetterSqlite3.Statement;
  private readonly direct: StatementRunner = {
    rows: (statement, parameters) => Promise.resolve(this.prepare(statement).all(...parameters)),
    run: (statement, parameters) =>
      Promise.resolve(this.prepare(statement).run(...parameters).changes),
  };

  constructor(
    private readonly db: Kysely<DatabaseSchema>,
    private readonly connection: BetterSqlite3.Database,
  ) {
    this.begin = connection.prepare('begin immediate');
    this.commit = connection.prepare('commit');
    this.rollback = connection.prepare('rollback');
  }

  rows(statement: Statement, parameters: Parameter[]): Promise<ResultRow[]> {
    return this.exclusive(() => this.direct.rows(statement, parameters));
  }

  run(statement: Statement, parameters: Parameter[]): Promise<number> {
    return this.exclusive(() => this.direct.run(statement, parameters));
  }

  transaction<T>(work: (runner: StatementRunner) => Promise<T>): Promise<T> {
    return this.exclusive(async () => {
      this.begin.run();
      let result: T;
      try {
        result = await work(this.direct);
      } catch (error) {
        if (this.connection.inTransaction) this.rollback.run();
        throw error;
      }
      try {
        this.commit.run();
      } catch (error) {
        if (this.connection.inTransaction) this.rollback.run();
        throw commitFailed(error);
      }
      return result;
    });
  }

  private exclusive<T>(work: () => Promise<T>): Promise<T> {
    return this.db.getExecutor().provideConnection(work);
  }

  private prepare(statement: Statement): BetterSqlite3.Statement<Parameter[], ResultRow> {
    let prepared = this.prepared.get(statement);
    if (prepared === undefined) {
      prepared = this.connection.prepare<Parameter[], ResultRow>(statement.sqlite);
      this.prepared.set(statement, prepared);
    }
    return prepared;
  }
}

const BEGIN = CompiledQuery.raw('begin');
const COMMIT = CompiledQuery.raw('commit');
const ROLLBACK = CompiledQuery.raw('rollback');

/** PostgreSQL: fixed statement text through the pool Kysely uses, with nothing built per call. */
export class PostgresStatements implements HotStatements {
  readonly dialect = 'postgres';
  constructor(private readonly db: Kysely<DatabaseSchema>) {}

  rows(statement: Statement, parameters: Parameter[]): Promise<ResultRow[]> {
    return this.db
      .getExecutor()
      .provideConnection((connection) => runnerOn(connection).rows(statement, parameters));
  }

  run(statement: Statement, parameters: Parameter[]): Promise<number> {
    return this.db
      .getExecutor()
      .provideConnection((connection) => runnerOn(connection).run(statement, parameters));
  }

  transaction<T>(work: (runner: StatementRunner) => Promise<T>): Promise<T> {
    return this.db.getExecutor().provideConnection(async (connection) => {
      await connection.executeQuery(BEGIN);
      let result: T;
      try {
        result = await work(runnerOn(connection));
      } catch (error) {
        // A broken connection cannot roll back; the server drops its transaction with it.
        await connection.executeQuery(ROLLBACK).catch(() => undefined);
        throw error;
      }
      try {
        await connection.executeQuery(COMMIT);
      } catch (error) {
        throw commitFailed(error);
      }
      return result;
    });
  }
}

function runnerOn(connection: DatabaseConnection): StatementRunner {
  return {
    rows: async (statement, parameters) =>
      (await connection.executeQuery<ResultRow>(CompiledQuery.raw(statement.postgres, parameters)))
        .rows,
    run: async (statement, parameters) =>
      Number(
        (await connection.executeQuery(CompiledQuery.raw(statement.postgres, parameters)))
          .numAffectedRows ?? 0n,
      ),
  };
}
