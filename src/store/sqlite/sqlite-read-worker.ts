import SQLite from 'better-sqlite3';

export interface SqliteReadTask {
  file: string;
  sql: string;
  parameters: readonly unknown[];
}

/** How long a read waits for SQLite's lock, in the rare moments a reader needs one (recovery). */
const BUSY_TIMEOUT_MS = 5000;

/** One connection per database file, kept for as long as the thread lives. */
const connections = new Map<string, SQLite.Database>();

function connectionTo(file: string): SQLite.Database {
  let connection = connections.get(file);
  if (connection === undefined) {
    connection = new SQLite(file);
    connection.pragma('query_only = ON');
    connection.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    // Sorts and groupings in memory, not in files under /var/tmp.
    connection.pragma('temp_store = MEMORY');
    connections.set(file, connection);
  }
  return connection;
}

/**
 * The worker-thread side of SqliteWorkerReads, run by piscina: one read on this thread's own
 * connection, which sees the last commit of the write-ahead log when the read begins.
 */
export default function read(task: SqliteReadTask): unknown[] {
  try {
    return connectionTo(task.file)
      .prepare(task.sql)
      .all(...task.parameters);
  } catch (error) {
    // better-sqlite3's SqliteError reaches the other thread as a plain object without its
    // message. A plain Error keeps the message; its cause arrives as a plain object with the
    // code (SQLITE_BUSY, say), which SqliteWorkerReads puts back on the error.
    const { message, code } = error as { message: string; code?: unknown };
    throw new Error(`${String(code)}: ${message}`, { cause: error });
  }
}
