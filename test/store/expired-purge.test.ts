import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Insertable, sql } from 'kysely';
import { IdempotencyKeys } from '../../src/idempotency/idempotency-keys.js';
import type { Database } from '../../src/store/database/database.js';
import type { IdempotencyKeysTable } from '../../src/store/database/admission-schema.js';
import { SqlIdempotencyStore } from '../../src/store/idempotency-store.js';
import { createTaskStore } from '../../src/store/task-store.js';
import type { TasksTable } from '../../src/store/database/task-schema.js';
import { purgeInBatches } from '../../src/support/batched-purge.js';
import { MemoryRateLimiter } from '../../src/admission/memory-rate-limiter.js';
import { openAdmission } from '../../src/bootstrap/open-admission.js';
import { loadConfig } from '../../src/config/load-config.js';
import { silentLog } from '../../src/support/log.js';
import { BACKENDS, openNodes } from '../helpers/database-backends.js';

const NOW = 1_000_000;

function keyRow(index: number, expiresAt: number): Insertable<IdempotencyKeysTable> {
  return {
    scope: 'tok_purge',
    idempotency_key: `key-${expiresAt}-${index}`,
    fingerprint: 'f'.repeat(64),
    state: 'done',
    owner: `req-${index}/owner`,
    lease_until: 0,
    request_id: `req-${index}`,
    result: '{"output":{}}',
    created_at: expiresAt - 86_400_000,
    expires_at: expiresAt,
  };
}

function taskRow(
  index: number,
  state: TasksTable['state'],
  expiresAt: number,
): Insertable<TasksTable> {
  return {
    id: `task-${state}-${expiresAt}-${index}`,
    request_id: `req-${index}`,
    ledger_row_id: `row-${index}`,
    owner: 'tok_purge',
    token_id: 'tok_purge',
    account: 'acme',
    issuer: 'gateway',
    model: 'gen-2.7-image-pro',
    request: '{}',
    resolve_uploads: 0,
    state,
    submitted_at: 0,
    expires_at: expiresAt,
  };
}

/** Inserts rows by hundreds, as a day of traffic would have left them. */
async function insertAll<Row>(rows: Row[], insert: (some: Row[]) => Promise<unknown>) {
  for (let start = 0; start < rows.length; start += 100)
    await insert(rows.slice(start, start + 100));
}

const countOf = async (database: Database, table: 'idempotency_keys' | 'tasks') =>
  Number(
    (
      await database.db
        .selectFrom(table)
        .select((eb) => eb.fn.countAll().as('count'))
        .executeTakeFirstOrThrow()
    ).count,
  );

for (const [name, targetFor] of BACKENDS) {
  describe(`expired rows purged by batches (${name})`, () => {
    it('purges every expired Idempotency-Key, keeps the live ones, and lets the event loop turn meanwhile', async (t) => {
      const nodes = await openNodes(t, targetFor, 1);
      if (nodes === undefined) return;
      const [database] = nodes as [Database];
      const expired = Array.from({ length: 450 }, (_, index) => keyRow(index, NOW - index));
      const live = Array.from({ length: 30 }, (_, index) => keyRow(index, NOW + 1 + index));
      await insertAll([...expired, ...live], (rows) =>
        database.db.insertInto('idempotency_keys').values(rows).execute(),
      );
      const keys = new IdempotencyKeys(
        new SqlIdempotencyStore(database),
        60_000,
        () => NOW,
        silentLog,
      );
      t.after(() => keys.close());

      let purgeEndedBeforeTheLoopTurned: boolean | undefined;
      let ended = false;
      setImmediate(() => (purgeEndedBeforeTheLoopTurned = ended));
      const purged = await keys.purgeExpired(100);
      ended = true;

      assert.equal(purged, 450);
      assert.equal(await countOf(database, 'idempotency_keys'), 30);
      assert.equal(purgeEndedBeforeTheLoopTurned, false, 'the loop turned before the last batch');
      assert.equal(await keys.purgeExpired(100), 0, 'a second purge finds nothing');
    });

    it('purges finished tasks past their expiry by batches, never an unfinished one', async (t) => {
      const nodes = await openNodes(t, targetFor, 1);
      if (nodes === undefined) return;
      const [database] = nodes as [Database];
      const store = createTaskStore(database.kind, database.db);
      const finished = ['SUCCEEDED', 'FAILED', 'CANCELED'] as const;
      const rows = [
        ...Array.from({ length: 250 }, (_, index) =>
          taskRow(index, finished[index % 3] as TasksTable['state'], NOW - index),
        ),
        ...Array.from({ length: 10 }, (_, index) => taskRow(index, 'PENDING', NOW - index)),
        ...Array.from({ length: 10 }, (_, index) => taskRow(index, 'RUNNING', NOW - index)),
        ...Array.from({ length: 10 }, (_, index) => taskRow(index, 'SUCCEEDED', NOW + 1 + index)),
      ];
      await insertAll(rows, (some) => database.db.insertInto('tasks').values(some).execute());

      const limits: number[] = [];
      const purged = await purgeInBatches((limit) => {
        limits.push(limit);
        return store.deleteExpired(NOW, limit);
      }, 100);

      assert.equal(purged, 250);
      assert.deepEqual(limits, [100, 100, 100], 'three statements, none over its limit');
      assert.equal(await countOf(database, 'tasks'), 30);
      const left = await database.db.selectFrom('tasks').select(['state', 'expires_at']).execute();
      assert.ok(
        left.every(
          (task) =>
            task.state === 'PENDING' || task.state === 'RUNNING' || Number(task.expires_at) > NOW,
        ),
      );
    });
  });
}

describe('the admission sweep', () => {
  it('purges expired Idempotency-Keys even when reclaiming reservations fails, and says it failed', async (t) => {
    const [, sqlite] = BACKENDS[0] as (typeof BACKENDS)[number];
    const [database] = (await openNodes(t, sqlite, 1)) as [Database];
    await insertAll([keyRow(1, NOW - 1), keyRow(2, NOW + 1)], (rows) =>
      database.db.insertInto('idempotency_keys').values(rows).execute(),
    );
    const admission = await openAdmission({
      config: loadConfig({}),
      database,
      now: () => NOW,
      log: silentLog,
      limiter: new MemoryRateLimiter(() => NOW),
    });
    t.after(() => admission.close());
    // Reclaiming reads this table; without it, that part of the sweep fails.
    await sql`drop table quota_reservations`.execute(database.db);

    await assert.rejects(
      admission.sweep(),
      /^Error: reclaiming expired reservations failed: .*quota_reservations/,
    );
    assert.equal(await countOf(database, 'idempotency_keys'), 1, 'the expired key went');
  });
});
