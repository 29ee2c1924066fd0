import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Worker } from 'node:worker_threads';
import { sql } from 'kysely';
import { openDatabase } from '../../src/store/database/database.js';

/**
 * Another connection, on a thread of its own (this one blocks in SQLite's busy handler), that
 * holds the write lock for `holdMs` once it has taken it.
 */
async function holdWriteLock(file: string, holdMs: number): Promise<Worker> {
  const holder = new Worker(
    `const { parentPort, workerData } = require('node:worker_threads');
     const SQLite = require(workerData.driver);
     const db = new SQLite(workerData.file);
     db.exec('begin immediate');
     parentPort.postMessage('locked');
     setTimeout(() => { db.exec('commit'); db.close(); }, workerData.holdMs);`,
    {
      eval: true,
      workerData: {
        file,
        holdMs,
        driver: createRequire(import.meta.url).resolve('better-sqlite3'),
      },
    },
  );
  await once(holder, 'message');
  return holder;
}

describe('SQLite transactions through Kysely', () => {
  let directory: string;
  before(async () => {
    directory = await mkdtemp(path.join(tmpdir(), 'imagegate-sqlite-transactions-'));
  });
  after(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  it('wait for another connection that holds the write lock, even when they read first', async () => {
    const file = path.join(directory, 'gateway.db');
    const database = await openDatabase({ kind: 'sqlite', file });
    try {
      await sql`create table counters (id integer primary key, value integer not null)`.execute(
        database.db,
      );
      await sql`insert into counters (id, value) values (1, 0)`.execute(database.db);
      const holder = await holdWriteLock(file, 200);
      const exited = once(holder, 'exit');
      // Read, then write: begun deferred, the write would be refused at once with SQLITE_BUSY.
      await database.db.transaction().execute(async (trx) => {
        const { rows } = await sql<{
          value: number;
        }>`select value from counters where id = 1`.execute(trx);
        await sql`update counters set value = ${(rows[0]?.value ?? 0) + 1} where id = 1`.execute(
          trx,
        );
      });
      await exited;
      const { rows } = await sql<{ value: number }>`select value from counters`.execute(
        database.db,
      );
      assert.deepEqual(rows, [{ value: 1 }]);
    } finally {
      await database.close();
    }
  });
});
