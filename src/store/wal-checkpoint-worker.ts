import SQLite from 'better-sqlite3';

export interface WalCheckpointTask {
  file: string;
  /** The last task before the pool closes: the connection is closed after its checkpoint. */
  last: boolean;
}

/** One connection per database file, kept between tasks. */
const connections = new Map<string, SQLite.Database>();

function connectionTo(file: string): SQLite.Database {
  let connection = connections.get(file);
  if (connection === undefined) {
    connection = new SQLite(file);
    // A checkpoint never waits for a lock: PASSIVE copies what it can now and leaves the rest.
    connection.pragma('busy_timeout = 0');
    connections.set(file, connection);
  }
  return connection;
}

/**
 * The worker-thread side of WalCheckpointer, run by piscina: a PASSIVE checkpoint of `file`'s
 * write-ahead log, on a connection of this thread's own.
 */
export default function checkpoint(task: WalCheckpointTask): void {
  const connection = connectionTo(task.file);
  try {
    connection.pragma('wal_checkpoint(PASSIVE)');
  } finally {
    if (task.last) {
      connections.delete(task.file);
      connection.close();
    }
  }
}
