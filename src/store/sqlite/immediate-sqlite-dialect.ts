import {
  CompiledQuery,
  type DatabaseConnection,
  type Driver,
  SqliteDialect,
  type SqliteDialectConfig,
  SqliteDriver,
} from 'kysely';

/**
 * Kysely's transactions on SQLite, begun with `begin immediate`, as the hot statements' are.
 *
 * A deferred `begin` takes the write lock at its first write. When that write follows a read
 * in the same transaction and another connection holds the lock (the checkpoint thread's RESTART
 * about once a second under load, or the CLI), SQLite answers SQLITE_BUSY at once, without its
 * busy handler: once the other connection commits, what the transaction read is out of date and
 * its write could never be allowed. Taking the lock up front makes every transaction wait its
 * turn in the busy handler instead, whatever it reads first.
 */
export class ImmediateSqliteDialect extends SqliteDialect {
  constructor(private readonly settings: SqliteDialectConfig) {
    super(settings);
  }

  override createDriver(): Driver {
    return new ImmediateSqliteDriver(this.settings);
  }
}

const BEGIN_IMMEDIATE = CompiledQuery.raw('begin immediate');

class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(BEGIN_IMMEDIATE);
  }
}
