import assert from 'node:assert/strict';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import SQLite from 'better-sqlite3';
import { sql } from 'kysely';
import { type Database, openDatabase } from '../../src/store/database/database.js';
import { WalCheckpointer } from '../../src/store/sqlite/wal-checkpointer.js';
import { eventually, quietFor } from '../helpers/waits.js';

async function pragma(database: Database, name: string): Promise<unknown> {
  const { rows } = await sql<Record<string, unknown>>`${sql.raw(`pragma ${name}`)}`.execute(
    database.db,
  );
  return Object.values(rows[0] ?? {})[0];
}

async function sizeOf(file: string): Promise<number> {
  return (await stat(file)).size;
}

describe('SQLite write-ahead-log checkpoints', () => {
  let directory: string;
  before(async () => {
    directory = await mkdtemp(path.join(tmpdir(), 'imagegate-checkpoints-'));
  });
  after(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  it('in the background: the connection never checkpoints, a worker thread does', async () => {
    const file = path.join(directory, 'background.db');
    const database = await openDatabase({ kind: 'sqlite', file }, { sqliteWork: 'background' });
    try {
      assert.equal(await pragma(database, 'wal_autocheckpoint'), 0);
      // A log grown by a burst is cut back when it starts over.
      assert.equal(await pragma(database, 'journal_size_limit'), 64 * 1024 * 1024);
      await sql`create table scratch (id integer primary key, bytes blob)`.execute(database.db);
      // What migrations wrote is copied into the file first, so that its size below is settled.
      await eventually(
        async () => {
          const { rows } = await sql<{
            busy: number;
            log: number;
            checkpointed: number;
          }>`pragma wal_checkpoint(PASSIVE)`.execute(database.db);
          const [result] = rows;
          return result?.busy === 0 && result.log === result.checkpointed;
        },
        10_000,
        'what migrations wrote copied into the database file',
      );
      const before = await sizeOf(file);
      // About 4 MiB of pages, past SQLite's own threshold of 1000 pages (4 MiB).
      for (let batch = 0; batch < 16; batch += 1)
        await sql`insert into scratch (bytes) select randomblob(4000) from (
            with recursive n(i) as (select 1 union all select i + 1 from n where i < 64)
            select i from n)`.execute(database.db);
      assert.ok((await sizeOf(`${file}-wal`)) > 4 * 1024 * 1024, 'the writes went to the log');
      // Nothing on this thread copies the log into the database file; the worker does.
      await eventually(
        async () => (await sizeOf(file)) >= before + 4 * 1024 * 1024,
        30_000,
        'the log checkpointed by the worker',
      );
    } finally {
      await database.close();
    }
  });

  it('keeps the log bounded under writes that never pause', async () => {
    // A PASSIVE checkpoint alone never catches up with a writer that commits while it copies,
    // so SQLite never starts the log over and the file grows for as long as the load lasts.
    const file = path.join(directory, 'sustained.db');
    const connection = new SQLite(file);
    connection.pragma('journal_mode = WAL');
    connection.pragma('synchronous = NORMAL');
    connection.pragma('busy_timeout = 2000');
    connection.exec('create table scratch (id integer primary key, bytes blob)');
    const insert = connection.prepare('insert into scratch (bytes) values (randomblob(6000))');
    const checkpointer = new WalCheckpointer(file, connection, {
      intervalMs: 100,
      log: { info: () => {}, warn: () => {}, error: () => {} },
    });
    checkpointer.start();
    let largestLog = 0;
    try {
      // A row of 6000 bytes takes at least two pages of 4 KiB, so each commit writes 8 KiB or
      // more to the log: 80 MiB and more in all, four commits and then a millisecond's pause at a
      // time. Unrestarted, the log file grows to all of it; restarted, it holds a few intervals'.
      const commits = 10_000;
      for (let commit = 1; commit <= commits; commit += 1) {
        insert.run();
        if (commit % 4 === 0) {
          largestLog = Math.max(largestLog, await sizeOf(`${file}-wal`));
          await sleep(1);
        }
      }
      assert.ok(
        largestLog < (commits * 8192) / 2,
        `the log grew to ${largestLog} bytes over ${commits} commits: it was never restarted`,
      );
    } finally {
      await checkpointer.stop();
      connection.close();
    }
  });

  it('says so when a reader that lasts keeps the log from starting over', async () => {
    const file = path.join(directory, 'held.db');
    const connection = new SQLite(file);
    connection.pragma('journal_mode = WAL');
    connection.exec('create table scratch (id integer primary key, bytes blob)');
    const insert = connection.prepare('insert into scratch (bytes) values (randomblob(6000))');
    // Another connection's read transaction, begun before the writes: no checkpoint may copy
    // past what it reads, so the log can neither be copied back nor start over while it lasts.
    const reader = new SQLite(file);
    reader.exec('begin');
    reader.prepare('select count(*) from scratch').get();
    const warnings: Array<{ fields: object; message: string }> = [];
    const checkpointer = new WalCheckpointer(file, connection, {
      intervalMs: 50,
      largeLogBytes: 1024 * 1024,
      log: {
        info: () => {},
        warn: (fields, message) => warnings.push({ fields, message }),
        error: () => {},
      },
    });
    checkpointer.start();
    try {
      // About 5 MiB of log: past the 1,000 pages after which the log is to start over, and past
      // the 1 MiB this checkpointer calls large.
      for (let commit = 0; commit < 640; commit += 1) insert.run();
      await eventually(() => warnings.length > 0, 30_000, 'a warning');
      assert.equal(warnings.length, 1, 'one warning, and only one a minute');
      assert.match(warnings[0]?.message ?? '', /write-ahead log could not start over/);
      assert.ok((warnings[0]?.fields as { logMiB: number }).logMiB >= 1);
    } finally {
      reader.exec('commit');
      reader.close();
      await checkpointer.stop();
      connection.close();
    }
  });

  it('inline (the CLI): SQLite checkpoints as it always does', async () => {
    const database = await openDatabase({
      kind: 'sqlite',
      file: path.join(directory, 'inline.db'),
    });
    try {
      assert.equal(await pragma(database, 'wal_autocheckpoint'), 1000);
    } finally {
      await database.close();
    }
  });

  it('keeps temporary tables and statement journals in memory, off the disk', async () => {
    const database = await openDatabase({ kind: 'sqlite', file: path.join(directory, 'temp.db') });
    try {
      assert.equal(await pragma(database, 'temp_store'), 2);
    } finally {
      await database.close();
    }
  });

  it('goes back to inline checkpoints, and says so, while background ones fail', async () => {
    const file = path.join(directory, 'failing.db');
    const connection = new SQLite(file);
    connection.pragma('journal_mode = WAL');
    const warnings: string[] = [];
    const checkpointer = new WalCheckpointer(file, connection, {
      intervalMs: 50,
      log: { info: () => {}, warn: (_fields, message) => warnings.push(message), error: () => {} },
      workerFile: new URL('../fixtures/failing-checkpoint-worker.mjs', import.meta.url).href,
    });
    try {
      checkpointer.start();
      assert.equal(connection.pragma('wal_autocheckpoint', { simple: true }), 0);
      await eventually(() => checkpointer.checkpointsInline, 30_000, 'inline checkpoints');
      assert.equal(connection.pragma('wal_autocheckpoint', { simple: true }), 1000);
      await quietFor(300, 'no second warning over the next failed attempts, 50 ms apart');
      // Logged once, not at every failed attempt.
      assert.deepEqual(warnings, [
        'a background SQLite checkpoint failed; the database checkpoints inline until one succeeds',
      ]);
    } finally {
      await checkpointer.stop();
      connection.close();
    }
  });

  it('stops its worker when the database closes', async () => {
    const database = await openDatabase(
      { kind: 'sqlite', file: path.join(directory, 'closing.db') },
      { sqliteWork: 'background' },
    );
    const started = Date.now();
    await database.close();
    assert.ok(Date.now() - started < 5000, 'the worker stopped when asked, not at the time-out');
  });
});
