import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after } from 'node:test';

const made: string[] = [];

// Once the file's tests are over, not in the test's own `t.after`: node:test runs a test's after
// hooks in the order they were added, so a directory made before the gateway or database that
// writes into it would be removed while they still run, and fail with ENOTEMPTY when they write
// again (a ledger flush, SQLite's write-ahead log on close).
after(() => Promise.all(made.map((directory) => rm(directory, { recursive: true, force: true }))));

/** A fresh directory under the system's temporary one, removed once the test file is done. */
export async function temporaryDirectory(prefix: string): Promise<string> {
  const directory = await mkdtemp(path.join(tmpdir(), prefix));
  made.push(directory);
  return directory;
}
