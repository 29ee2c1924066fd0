import SQLite from 'better-sqlite3';
import { AUTOCHECKPOINT_PAGES } from './wal-limits.js';

export interface WalCheckpointTask {
  file: string;
  /** The last task before the pool closes: the connection is closed after its checkpoint. */
  last: boolean;
}

/** What a checkpoint found, for the thread that runs the server to act on. */
export interface WalCheckpointReport {
  /** The log's length when the checkpoint began. */
  logBytes: number;
  /** Whether the next commit writes from the log's beginning (or the log was short anyway). */
  startsOver: boolean;
}

/** What `pragma wal_checkpoint` reports: frames in the log, and how many of them are copied. */
interface CheckpointRow {
  busy: number;
  log: number;
  checkpointed: number;
}

/**
 * Before a RESTART, PASSIVE runs again until one pass saw at most this many pages written during
 * the pass before (or CATCH_UP_PASSES ran): what is left for the RESTART to copy, holding writers.
 */
const RESTART_REMAINDER_FRAMES = 64;
const CATCH_UP_PASSES = 4;

/** One connection per database file, kept between tasks. */
const connections = new Map<string, SQLite.Database>();

function connectionTo(file: string): SQLite.Database {
  let connection = connections.get(file);
  if (connection === undefined) {
    connection = new SQLite(file);
    // A checkpoint never waits for a lock: it copies what it can now and leaves the rest.
    connection.pragma('busy_timeout = 0');
    connections.set(file, connection);
  }
  return connection;
}

function checkpointed(connection: SQLite.Database, mode: 'PASSIVE' | 'RESTART'): CheckpointRow {
  return (connection.pragma(`wal_checkpoint(${mode})`) as CheckpointRow[])[0] as CheckpointRow;
}

/**
 * The worker-thread side of WalCheckpointer, run by piscina, on a connection of this thread's own.
 *
 * A PASSIVE checkpoint copies the log into the database file without ever holding a writer up.
 * But SQLite starts the log over only when a writer begins while every frame is copied, and a
 * writer that commits while the copy runs (any steady load) leaves frames behind every time: the
 * file would grow for as long as the load lasts. So a log of AUTOCHECKPOINT_PAGES or more is
 * started over with a RESTART, which holds writers while it syncs the log, copies what is left and
 * syncs the database file. To keep that short, PASSIVE first runs again, each pass copying what
 * was written during the one before, until little is left. Since this connection never waits
 * for a lock, a RESTART that meets a transaction or a reader gives up and is tried again at the
 * next interval.
 */
export default function checkpoint(task: WalCheckpointTask): WalCheckpointReport {
  const connection = connectionTo(task.file);
  try {
    let pass = checkpointed(connection, 'PASSIVE');
    const logBytes =
      Math.max(0, pass.log) * (connection.pragma('page_size', { simple: true }) as number);
    if (pass.log < AUTOCHECKPOINT_PAGES) return { logBytes, startsOver: true };
    for (let catchUp = 0; catchUp < CATCH_UP_PASSES; catchUp += 1) {
      const next = checkpointed(connection, 'PASSIVE');
      // Negative when the log started over meanwhile, or when no checkpoint could run.
      const writtenMeanwhile = next.log - pass.log;
      pass = next;
      if (writtenMeanwhile <= RESTART_REMAINDER_FRAMES) break;
    }
    return { logBytes, startsOver: checkpointed(connection, 'RESTART').busy === 0 };
  } finally {
    if (task.last) {
      connections.delete(task.file);
      connection.close();
    }
  }
}
