import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import SQLite from 'better-sqlite3';
import { type CompiledQuery, Kysely, SqliteDialect } from 'kysely';
import { openDatabase } from '../../src/store/database/database.js';
import { SqliteStatements } from '../../src/store/billing/hot-statements.js';
import { SqlIdempotencyStore } from '../../src/store/idempotency-store.js';
import type { DatabaseSchema } from '../../src/store/database/schema.js';
import { SqliteTaskStore } from '../../src/store/task-store.js';

/**
 * The queries a serving node runs by itself over a day's rows must read an index made for them,
 * not the whole table: SQLite's plan for each, as the store sends it.
 */
describe('SQLite plans of the renewals and sweeps', () => {
  let directory: string;
  let connection: SQLite.Database;
  let db: Kysely<DatabaseSchema>;
  const sent: CompiledQuery[] = [];

  before(async () => {
    directory = await mkdtemp(path.join(tmpdir(), 'imagegate-maintenance-indexes-'));
    const file = path.join(directory, 'gateway.db');
    await (await openDatabase({ kind: 'sqlite', file })).close();
    connection = new SQLite(file);
    db = new Kysely<DatabaseSchema>({
      dialect: new SqliteDialect({ database: connection }),
      log: (event) => {
        if (event.level === 'query') sent.push(event.query);
      },
    });
  });
  after(async () => {
    await db.destroy();
    await rm(directory, { recursive: true, force: true });
  });

  /** What SQLite plans for the one query `run` sends. */
  async function planOf(run: () => Promise<unknown>): Promise<string> {
    sent.length = 0;
    await run();
    assert.equal(sent.length, 1, 'one query');
    const query = sent[0] as CompiledQuery;
    const steps = connection
      .prepare(`explain query plan ${query.sql}`)
      .all(...(query.parameters as unknown[])) as Array<{ detail: string }>;
    return steps.map((step) => step.detail).join('; ');
  }

  it("renews running Idempotency-Key claims through the index of running claims' owners", async () => {
    const keys = new SqlIdempotencyStore({ db, statements: new SqliteStatements(db, connection) });
    const plan = await planOf(() => keys.renew(['owner-1', 'owner-2'], 5));
    assert.match(plan, /USING INDEX idempotency_keys_running_owner/);
    assert.doesNotMatch(plan, /SCAN idempotency_keys/);
  });

  it('sweeps expired finished tasks through the index on state and expiry', async () => {
    const plan = await planOf(() => new SqliteTaskStore(db).deleteExpired(1000, 200));
    assert.match(plan, /USING INDEX tasks_state_expires_at/);
    assert.doesNotMatch(plan, /SCAN tasks/);
  });

  it('purges expired Idempotency-Keys through the index on expiry, then the primary key', async () => {
    const keys = new SqlIdempotencyStore({ db, statements: new SqliteStatements(db, connection) });
    const plan = await planOf(() => keys.deleteExpired(1000, 200));
    assert.match(plan, /USING INDEX idempotency_keys_expires_at/);
    assert.match(
      plan,
      /INDEX sqlite_autoindex_idempotency_keys_1 \(scope=\? AND idempotency_key=\?\)/,
    );
    assert.doesNotMatch(plan, /SCAN idempotency_keys/);
  });
});
