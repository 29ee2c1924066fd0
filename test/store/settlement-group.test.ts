import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it, type TestContext } from 'node:test';
import { type RawBuilder, sql } from 'kysely';
import pg from 'pg';
import { type Database, DEFAULT_DATABASE_LIMITS } from '../../src/store/database/database.js';
import type {
  HotStatements,
  Parameter,
  Statement,
} from '../../src/store/billing/hot-statements.js';
import { SqlIdempotencyStore } from '../../src/store/idempotency-store.js';
import { SqlQuotaStore } from '../../src/store/billing/quota-store.js';
import { SqlTokenLimitsStore } from '../../src/store/token-limits-store.js';
import { SqlUsageStore } from '../../src/store/usage-store.js';
import { BACKENDS, insertToken, openNodes } from '../helpers/database-backends.js';
import { TEST_POSTGRES_URL } from '../helpers/postgres.js';
import { tokensLockedInIdOrder } from '../../src/store/billing/token-locks.js';
import { settleAtOnce } from '../../src/store/billing/settlement-at-once.js';
import { eventually } from '../helpers/waits.js';
import { type PlanOptions, settlementPlan } from '../helpers/settlement-plans.js';

/**
 * The database's statements, with every transaction recorded and held open (after its last
 * statement, before its COMMIT) until the test lets it go. `dialect`: as whom they present
 * themselves; 'sqlite' keeps PostgreSQL's reservations on the general path, in transactions.
 */
function heldStatements(inner: HotStatements, dialect: HotStatements['dialect'] = inner.dialect) {
  const log: string[] = [];
  const gates: (() => void)[] = [];
  let holding = true;
  let transactions = 0;
  const sent: { statement: Statement; parameters: Parameter[] }[] = [];
  const statements: HotStatements = {
    dialect,
    rows: (statement, parameters) => {
      sent.push({ statement, parameters });
      return inner.rows(statement, parameters);
    },
    run: (statement, parameters) => inner.run(statement, parameters),
    transaction: async (work) => {
      const number = ++transactions;
      const result = await inner.transaction(async (runner) => {
        const done = await work(runner);
        if (holding) await new Promise<void>((resolve) => gates.push(resolve));
        return done;
      });
      log.push(`commit ${number}`);
      return result;
    },
  };
  return {
    statements,
    log,
    /** The statements run outside any transaction (the one-statement paths), with their values. */
    sent,
    transactions: () => transactions,
    /** Resolves once `count` transactions are waiting to commit. */
    waitingFor: async (count: number) => {
      const deadline = Date.now() + 10_000;
      while (gates.length < count) {
        assert.ok(Date.now() < deadline, `${count} transactions never reached their commit`);
        await new Promise((resolve) => setImmediate(resolve));
      }
    },
    commitNext: () => gates.shift()?.(),
    commitAll: () => {
      holding = false;
      for (const gate of gates.splice(0)) gate();
    },
  };
}

/** The outcome of settling `delivered` images of `tokenId` by their plan, its row `rowId`. */
async function settleOn(
  quota: SqlQuotaStore,
  tokenId: string | undefined,
  rowId: string,
  delivered: number,
  options: PlanOptions = {},
) {
  return (await quota.settle(settlementPlan(tokenId, { rowId, delivered, ...options }))).outcome;
}

async function standing(database: Database, tokenId: string) {
  const found = await new SqlTokenLimitsStore(database.db).find(tokenId);
  assert.ok(found);
  return { used: found.imagesUsed, reserved: found.imagesReserved };
}

/**
 * Runs `lockingQuery` (a SELECT ... FOR UPDATE) in a transaction of `database`'s that holds its
 * row locks until `release` commits it; resolves once the locks are held.
 */
async function holdRows(database: Database, lockingQuery: RawBuilder<unknown>) {
  let release = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let holding = () => {};
  const held = new Promise<void>((resolve) => {
    holding = resolve;
  });
  const transaction = database.db.transaction().execute(async (trx) => {
    await lockingQuery.execute(trx);
    holding();
    await released;
  });
  await Promise.race([held, transaction]);
  return {
    release: async () => {
      release();
      await transaction;
    },
  };
}

/** A new token whose image quota is `imageQuota`. */
async function tokenWithQuota(database: Database, imageQuota: number): Promise<string> {
  const tokenId = await insertToken(database);
  await new SqlTokenLimitsStore(database.db).update(tokenId, { imageQuota });
  return tokenId;
}

/** The status and images billed of each row of `ids`, in their order. */
async function billing(database: Database, ids: Record<string, string>) {
  const rows = await rowsById(database);
  return Object.values(ids).map((id) => [rows.get(id)?.status, rows.get(id)?.imagesBilled]);
}

async function rowsById(database: Database) {
  const rows = await new SqlUsageStore(database).list({}, 1000);
  return new Map(rows.map((row) => [row.id, row]));
}

for (const [backend, targetFor] of BACKENDS) {
  describe(`settlements sharing a transaction on ${backend}`, () => {
    async function setUp(
      t: TestContext,
      quota = 100,
      dialect: HotStatements['dialect'] | undefined = undefined,
    ) {
      const nodes = await openNodes(t, targetFor, 2);
      if (nodes === undefined) return undefined;
      const [first, second] = nodes as [Database, Database];
      const tokenId = await tokenWithQuota(first, quota);
      const held = heldStatements(first.statements, dialect);
      const quotaStore = new SqlQuotaStore({ db: first.db, statements: held.statements });
      return { first, second, tokenId, held, quota: quotaStore };
    }

    /** Reserves `images` for each id, outside the held transactions. */
    async function reserveAll(database: Database, tokenId: string, ids: Record<string, number>) {
      const direct = new SqlQuotaStore(database);
      for (const [id, images] of Object.entries(ids))
        assert.equal(await direct.reserve({ id, tokenId, images }, 0, 60_000), true);
    }

    // The settlement tests below hold the general path, in transactions ('sqlite' as the dialect
    // keeps PostgreSQL on it); PostgreSQL's one-statement settlement has tests of its own.
    it('carries the settlements that arrive meanwhile in one transaction, and answers each after its commit', async (t) => {
      const set = await setUp(t, 100, 'sqlite');
      if (set === undefined) return;
      const { first, tokenId, held, quota } = set;
      await reserveAll(first, tokenId, { opener: 1, a: 2, b: 3, c: 4 });
      const answered: string[] = [];
      const settle = (reservationId: string, rowId: string, delivered: number) =>
        settleOn(quota, tokenId, rowId, delivered, { reservationId }).then((outcome) => {
          answered.push(`${reservationId} ${outcome}`);
          return outcome;
        });
      const rowIds = { opener: randomUUID(), a: randomUUID(), b: randomUUID(), c: randomUUID() };
      const opener = settle('opener', rowIds.opener, 1);
      await held.waitingFor(1);
      const grouped = [
        settle('a', rowIds.a, 2),
        settle('b', rowIds.b, 3),
        settle('c', rowIds.c, 4),
      ];
      held.commitNext();
      assert.equal(await opener, 'billed');
      await held.waitingFor(1);
      assert.equal(held.transactions(), 2, 'the three that waited share the second transaction');
      assert.deepEqual(
        answered,
        ['opener billed'],
        'none of the group is answered before its commit',
      );
      // Another node sees none of the group's rows before the commit (SQLite's one connection
      // is busy with the transaction until then).
      if (backend === 'PostgreSQL') assert.equal((await rowsById(set.second)).has(rowIds.a), false);
      held.commitAll();
      assert.deepEqual(await Promise.all(grouped), ['billed', 'billed', 'billed']);
      assert.deepEqual(held.log, ['commit 1', 'commit 2']);
      assert.deepEqual(await standing(first, tokenId), { used: 10, reserved: 0 });
      const rows = await rowsById(first);
      assert.deepEqual(
        Object.values(rowIds).map((id) => rows.get(id)?.imagesBilled),
        [1, 2, 3, 4],
      );
    });

    it('bills the members whose fences hold and nothing to those whose fences fell, in one transaction', async (t) => {
      const set = await setUp(t, 10, 'sqlite');
      if (set === undefined) return;
      const { first, second, tokenId, held, quota } = set;
      const direct = new SqlQuotaStore(first);
      await reserveAll(first, tokenId, { opener: 1, kept: 2, gone: 2 });
      assert.equal(await direct.reserve({ id: 'lapsed', tokenId, images: 3 }, 0, 1000), true);
      assert.equal(await new SqlQuotaStore(second).reclaimExpired(1000), 3);
      const keys = new SqlIdempotencyStore(first);
      const claim = (owner: string) => ({
        scope: tokenId,
        key: 'key-1',
        fingerprint: 'f',
        owner,
        requestId: owner,
        now: 0,
        leaseUntil: 1000,
        expiresAt: 86_400_000,
      });
      assert.equal(await keys.claim(claim('stalled')), true);
      assert.equal(
        await new SqlIdempotencyStore(second).takeOver(
          tokenId,
          'key-1',
          'successor',
          'r',
          1000,
          9000,
        ),
        true,
      );
      const ids = {
        opener: randomUUID(),
        kept: randomUUID(),
        lapsed: randomUUID(),
        gone: randomUUID(),
        stalled: randomUUID(),
        successor: randomUUID(),
      };
      const settle = (
        reservationId: string | undefined,
        rowId: string,
        delivered: number,
        options: { present?: boolean; owner?: string } = {},
      ) =>
        settleOn(quota, tokenId, rowId, delivered, {
          reservationId,
          present: options.present ?? true,
          claim:
            options.owner === undefined
              ? undefined
              : {
                  scope: tokenId,
                  key: 'key-1',
                  owner: options.owner,
                  requestId: options.owner,
                  result: JSON.stringify({ by: options.owner }),
                },
        });
      const opener = settle('opener', ids.opener, 1);
      await held.waitingFor(1);
      const grouped = Promise.all([
        settle('kept', ids.kept, 2),
        settle('lapsed', ids.lapsed, 3),
        settle('gone', ids.gone, 2, { present: false }),
        settle(undefined, ids.stalled, 1, { owner: 'stalled' }),
        settle(undefined, ids.successor, 1, { owner: 'successor' }),
      ]);
      held.commitAll();
      await opener;
      assert.deepEqual(await grouped, [
        'billed',
        'lease-lost',
        'caller-gone',
        'lease-lost',
        'billed',
      ]);
      assert.equal(held.transactions(), 2, 'the five shared one transaction');
      assert.deepEqual(await standing(first, tokenId), { used: 1 + 2 + 1, reserved: 0 });
      assert.deepEqual(await billing(first, ids), [
        [200, 1],
        [200, 2],
        [503, 0],
        [499, 0],
        [503, 0],
        [200, 1],
      ]);
      assert.deepEqual((await keys.find(tokenId, 'key-1'))?.outcome, {
        kind: 'result',
        result: JSON.stringify({ by: 'successor' }),
        requestId: 'successor',
      });
    });

    it('does not let a failing member sink the rest of its group', async (t) => {
      const set = await setUp(t, 100, 'sqlite');
      if (set === undefined) return;
      const { first, tokenId, held, quota } = set;
      await reserveAll(first, tokenId, { opener: 1, a: 2, bad: 3, c: 4 });
      const settle = (reservationId: string, rowId: string, delivered: number, fails = false) => {
        const plan = settlementPlan(tokenId, { reservationId, rowId, delivered });
        // A row the ledger refuses: its account may not be null.
        if (fails) plan.row.account = null as unknown as string;
        return quota.settle(plan).then(({ outcome }) => outcome);
      };
      const opener = settle('opener', randomUUID(), 1);
      await held.waitingFor(1);
      const ids = { a: randomUUID(), bad: randomUUID(), c: randomUUID() };
      const grouped = Promise.all([
        settle('a', ids.a, 2),
        settle('bad', ids.bad, 3, true).catch((error: unknown) => error),
        settle('c', ids.c, 4),
      ]);
      held.commitAll();
      await opener;
      const [a, bad, c] = await grouped;
      assert.deepEqual([a, c], ['billed', 'billed']);
      assert.ok(bad instanceof Error, String(bad));
      assert.ok(held.transactions() > 2, 'the failed group was tried again in parts');
      assert.deepEqual(
        await standing(first, tokenId),
        { used: 1 + 2 + 4, reserved: 3 },
        'the failing member rolled back: its reservation is still held, to be released or reclaimed',
      );
      const rows = await rowsById(first);
      assert.deepEqual(
        [rows.get(ids.a)?.imagesBilled, rows.has(ids.bad), rows.get(ids.c)?.imagesBilled],
        [2, false, 4],
      );
    });

    it('fails every member at once, without trying each again, when the database is unreachable', async (t) => {
      const set = await setUp(t);
      if (set === undefined) return;
      const { first, tokenId } = set;
      await reserveAll(first, tokenId, { a: 1, b: 1 });
      let transactions = 0;
      const unreachable = Object.assign(new Error('connect ECONNREFUSED'), {
        code: 'ECONNREFUSED',
      });
      const quota = new SqlQuotaStore({
        db: first.db,
        statements: {
          ...first.statements,
          dialect: 'sqlite',
          rows: (statement, parameters) => first.statements.rows(statement, parameters),
          run: (statement, parameters) => first.statements.run(statement, parameters),
          transaction: () => {
            transactions++;
            return Promise.reject(unreachable);
          },
        },
      });
      const settle = (reservationId: string) =>
        settleOn(quota, tokenId, randomUUID(), 1, { reservationId }).catch(
          (error: unknown) => error,
        );
      assert.deepEqual(await Promise.all([settle('a'), settle('b'), settle('a')]), [
        unreachable,
        unreachable,
        unreachable,
      ]);
      assert.equal(transactions, 1, 'the three, submitted in one turn, together, and not again');
      assert.deepEqual(await standing(first, tokenId), { used: 0, reserved: 2 });
    });

    it('holds the reservations that arrive together with one statement per token, and each alone near the quota', async (t) => {
      // The general path, in transactions: PostgreSQL takes it too when a group does not fit.
      const set = await setUp(t, 10, 'sqlite');
      if (set === undefined) return;
      const { first, tokenId, held, quota } = set;
      const reserve = (id: string, images: number) =>
        quota.reserve({ id, tokenId, images }, 0, 60_000);
      const opener = reserve('opener', 1);
      await held.waitingFor(1);
      const together = Promise.all([reserve('a', 2), reserve('b', 3)]);
      held.commitNext();
      assert.equal(await opener, true);
      await held.waitingFor(1);
      held.commitNext();
      assert.deepEqual(await together, [true, true]);
      // 6 of 10 held: 5 more do not fit together, so each is tried alone, in order.
      const nearFull = reserve('c', 1);
      await held.waitingFor(1);
      const crowded = Promise.all([reserve('d', 2), reserve('e', 3), reserve('f', 1)]);
      held.commitAll();
      assert.equal(await nearFull, true);
      assert.deepEqual(await crowded, [true, false, true]);
      assert.equal(held.transactions(), 4);
      assert.deepEqual(await standing(first, tokenId), { used: 0, reserved: 10 });
    });

    if (backend === 'PostgreSQL')
      it('records a row whose account holds a lone surrogate, with U+FFFD in its place, as a text parameter would be', async (t) => {
        const set = await setUp(t, 10);
        if (set === undefined) return;
        const { first, tokenId, held, quota } = set;
        held.commitAll();
        await reserveAll(first, tokenId, { odd: 1 });
        const settledId = randomUUID();
        const insertedId = randomUUID();
        const oddAccount = (id: string) => {
          const plan = settlementPlan(tokenId, { reservationId: 'odd', rowId: id });
          plan.row.account = 'caller-\ud800-\\ud800';
          return plan;
        };
        const { outcome } = await quota.settle(oddAccount(settledId));
        assert.equal(outcome, 'billed');
        await new SqlUsageStore(first).insert([oddAccount(insertedId).row]);
        const rows = await rowsById(first);
        assert.equal(rows.get(settledId)?.account, 'caller-\ufffd-\\ud800');
        assert.equal(rows.get(insertedId)?.account, 'caller-\ufffd-\\ud800');
        assert.deepEqual(await standing(first, tokenId), { used: 1, reserved: 0 });
      });

    if (backend === 'PostgreSQL')
      it('holds a group of one token that fits in one statement, outside any transaction, and falls back when it does not', async (t) => {
        const set = await setUp(t, 10);
        if (set === undefined) return;
        const { first, tokenId, held, quota } = set;
        const reserve = (id: string, images: number) =>
          quota.reserve({ id, tokenId, images }, 0, 60_000);
        assert.deepEqual(await Promise.all([reserve('a', 2), reserve('b', 3), reserve('c', 1)]), [
          true,
          true,
          true,
        ]);
        assert.equal(held.transactions(), 0, 'held by one statement, no transaction');
        assert.deepEqual(await standing(first, tokenId), { used: 0, reserved: 6 });
        // 5 more do not fit together: nothing is held by the statement, and each is tried alone.
        const crowded = Promise.all([reserve('d', 2), reserve('e', 3), reserve('f', 1)]);
        await held.waitingFor(1);
        held.commitAll();
        assert.deepEqual(await crowded, [true, false, true]);
        assert.equal(held.transactions(), 1);
        assert.deepEqual(await standing(first, tokenId), { used: 0, reserved: 9 });
        const rows = await first.db
          .selectFrom('quota_reservations')
          .select(['id', 'images'])
          .execute();
        assert.deepEqual(rows.map((row) => [row.id, Number(row.images)]).sort(), [
          ['a', 2],
          ['b', 3],
          ['c', 1],
          ['d', 2],
          ['f', 1],
        ]);
      });

    if (backend === 'PostgreSQL')
      it('settles a group of one token in one statement, outside any transaction, with the fences read before it is sent', async (t) => {
        const set = await setUp(t, 10);
        if (set === undefined) return;
        const { first, tokenId, held, quota } = set;
        await reserveAll(first, tokenId, { a: 2, b: 3, c: 1 });
        const ids = { a: randomUUID(), b: randomUUID(), c: randomUUID(), free: randomUUID() };
        const settle = (
          reservationId: string | undefined,
          rowId: string,
          delivered: number,
          present = true,
        ) =>
          settleOn(quota, reservationId === undefined ? undefined : tokenId, rowId, delivered, {
            reservationId,
            present,
          });
        assert.deepEqual(
          await Promise.all([
            settle('a', ids.a, 2),
            settle('b', ids.b, 3, false),
            settle('c', ids.c, 1),
            settle(undefined, ids.free, 1),
          ]),
          ['billed', 'caller-gone', 'billed', 'billed'],
        );
        assert.equal(held.transactions(), 0, 'one statement, no transaction');
        assert.deepEqual(await standing(first, tokenId), { used: 2 + 1, reserved: 0 });
        assert.deepEqual(await billing(first, ids), [
          [200, 2],
          [499, 0],
          [200, 1],
          [200, 1],
        ]);
        assert.equal(
          (await first.db.selectFrom('quota_reservations').select('id').execute()).length,
          0,
        );
      });

    if (backend === 'PostgreSQL')
      it('changes nothing in one statement when a reservation is gone or locked, and the transaction settles the group', async (t) => {
        const set = await setUp(t, 10);
        if (set === undefined) return;
        const { first, second, tokenId, held, quota } = set;
        await reserveAll(first, tokenId, { kept: 2, locked: 1 });
        const direct = new SqlQuotaStore(first);
        assert.equal(await direct.reserve({ id: 'lapsed', tokenId, images: 3 }, 0, 1000), true);
        assert.equal(await new SqlQuotaStore(second).reclaimExpired(1000), 3);
        const ids = { kept: randomUUID(), lapsed: randomUUID(), locked: randomUUID() };
        const settle = (reservationId: string, rowId: string, delivered: number) =>
          settleOn(quota, tokenId, rowId, delivered, { reservationId });
        // A reservation gone: the statement does not apply, and the transaction bills the rest.
        const lapsedGroup = Promise.all([
          settle('kept', ids.kept, 2),
          settle('lapsed', ids.lapsed, 3),
        ]);
        await held.waitingFor(1);
        held.commitNext();
        assert.deepEqual(await lapsedGroup, ['billed', 'lease-lost']);
        assert.equal(held.transactions(), 1);
        assert.deepEqual(await standing(first, tokenId), { used: 2, reserved: 1 });

        // A reservation locked by another session: the statement does not wait for it; the
        // transaction does, and settles once the lock is let go.
        const lock = await holdRows(
          second,
          sql`select id from quota_reservations where id = 'locked' for update`,
        );
        const waiting = settle('locked', ids.locked, 1);
        await eventually(
          () => held.transactions() >= 2,
          5000,
          'the statement giving way to a transaction',
          5,
        );
        await lock.release();
        await held.waitingFor(1);
        held.commitAll();
        assert.equal(await waiting, 'billed');
        assert.deepEqual(await standing(first, tokenId), { used: 3, reserved: 0 });
        assert.deepEqual(await billing(first, ids), [
          [200, 2],
          [503, 0],
          [200, 1],
        ]);
      });

    if (backend === 'PostgreSQL')
      it('applies nothing of a one-statement settlement when a reservation is gone or named twice, and answers so', async (t) => {
        const set = await setUp(t, 10);
        if (set === undefined) return;
        const { first, tokenId } = set;
        await reserveAll(first, tokenId, { kept: 2 });
        const group = (reservationIds: string[]) =>
          reservationIds.map((reservationId) => ({
            plan: settlementPlan(tokenId, { reservationId, rowId: randomUUID(), delivered: 1 }),
            submittedAt: performance.now(),
          }));
        const state = async () => ({
          standing: await standing(first, tokenId),
          reservations: (await first.db.selectFrom('quota_reservations').select('id').execute())
            .map((row) => row.id)
            .sort(),
          rows: (await rowsById(first)).size,
        });
        const before = await state();
        assert.deepEqual(before, {
          standing: { used: 0, reserved: 2 },
          reservations: ['kept'],
          rows: 0,
        });
        assert.equal(
          await settleAtOnce(first.statements, group(['kept', 'never-held'])),
          undefined,
        );
        assert.equal(await settleAtOnce(first.statements, group(['kept', 'kept'])), undefined);
        assert.deepEqual(await state(), before, 'nothing changed');
        const settled = await settleAtOnce(first.statements, group(['kept']));
        assert.deepEqual(
          settled?.map(({ outcome }) => outcome),
          ['billed'],
        );
        assert.deepEqual(await state(), {
          standing: { used: 1, reserved: 0 },
          reservations: [],
          rows: 1,
        });
      });

    if (backend === 'PostgreSQL')
      it('fails a one-statement settlement whose token row stays locked past the lock time-out, without waiting again in a transaction', async (t) => {
        const set = await setUp(t, 10);
        if (set === undefined) return;
        const { first, second, tokenId, held, quota } = set;
        await reserveAll(first, tokenId, { waits: 1 });
        const lock = await holdRows(
          second,
          sql`select id from tokens where id = ${tokenId} for update`,
        );
        const started = Date.now();
        const outcome = await settleOn(quota, tokenId, randomUUID(), 1, {
          reservationId: 'waits',
        }).catch((error: unknown) => error);
        const waitedMs = Date.now() - started;
        await lock.release();
        assert.equal((outcome as { code?: string }).code, '55P03', String(outcome));
        assert.equal(held.transactions(), 0, 'no transaction waited the time-out again');
        assert.ok(
          waitedMs < 2 * DEFAULT_DATABASE_LIMITS.lockTimeoutMs,
          `answered after one lock time-out (${waitedMs} ms)`,
        );
        assert.deepEqual(
          await standing(first, tokenId),
          { used: 0, reserved: 1 },
          'nothing changed: the reservation is still held, to be released or reclaimed',
        );
      });

    if (backend === 'PostgreSQL')
      it('settles a group of several tokens in one statement, and one with an Idempotency-Key in a transaction', async (t) => {
        const set = await setUp(t, 10);
        if (set === undefined) return;
        const { first, tokenId, held, quota } = set;
        const otherToken = await tokenWithQuota(first, 10);
        await reserveAll(first, tokenId, { mine: 2, keyed: 1 });
        await reserveAll(first, otherToken, { theirs: 3, gone: 1 });
        const settle = (token: string, reservationId: string, rowId: string, keyed = false) =>
          settleOn(
            quota,
            token,
            rowId,
            reservationId === 'mine' ? 2 : reservationId === 'theirs' ? 3 : 1,
            {
              reservationId,
              claim: keyed
                ? { scope: token, key: 'k', owner: 'o', requestId: 'r', result: '{}' }
                : undefined,
              present: reservationId !== 'gone',
            },
          );
        const ids = { mine: randomUUID(), theirs: randomUUID(), gone: randomUUID() };
        assert.deepEqual(
          await Promise.all([
            settle(tokenId, 'mine', ids.mine),
            settle(otherToken, 'theirs', ids.theirs),
            settle(otherToken, 'gone', ids.gone),
          ]),
          ['billed', 'billed', 'caller-gone'],
        );
        assert.equal(held.transactions(), 0, 'one statement, no transaction');
        // Each token is charged what its own members billed and freed what they held.
        assert.deepEqual(await standing(first, tokenId), { used: 2, reserved: 1 });
        assert.deepEqual(await standing(first, otherToken), { used: 3, reserved: 0 });
        assert.deepEqual(await billing(first, ids), [
          [200, 2],
          [200, 3],
          [499, 0],
        ]);
        // A key that is not claimed is no longer this request's: lease-lost, as in a transaction.
        const keyed = settle(tokenId, 'keyed', randomUUID(), true);
        await held.waitingFor(1);
        held.commitAll();
        assert.equal(await keyed, 'lease-lost');
        assert.equal(held.transactions(), 1);
        assert.deepEqual(await standing(first, tokenId), { used: 2, reserved: 0 });
      });

    if (backend === 'PostgreSQL')
      it('holds a group of several tokens in one statement, and falls back as a whole when one token has no room', async (t) => {
        const set = await setUp(t, 10);
        if (set === undefined) return;
        const { first, tokenId, held, quota } = set;
        const otherToken = await tokenWithQuota(first, 4);
        const reserve = (id: string, token: string, images: number) =>
          quota.reserve({ id, tokenId: token, images }, 0, 60_000);
        assert.deepEqual(
          await Promise.all([
            reserve('a', tokenId, 2),
            reserve('b', otherToken, 1),
            reserve('c', tokenId, 3),
            reserve('d', otherToken, 2),
          ]),
          [true, true, true, true],
        );
        assert.equal(held.transactions(), 0, 'held by one statement, no transaction');
        assert.deepEqual(await standing(first, tokenId), { used: 0, reserved: 5 });
        assert.deepEqual(await standing(first, otherToken), { used: 0, reserved: 3 });
        // The other token has room for 1 more, not 2: the statement holds nothing, not even the
        // first token's, and the transaction tries each member alone.
        const crowded = Promise.all([
          reserve('e', tokenId, 1),
          reserve('f', otherToken, 2),
          reserve('g', otherToken, 1),
        ]);
        await held.waitingFor(1);
        held.commitAll();
        assert.deepEqual(await crowded, [true, false, true]);
        assert.equal(held.transactions(), 1);
        assert.deepEqual(await standing(first, tokenId), { used: 0, reserved: 6 });
        assert.deepEqual(await standing(first, otherToken), { used: 0, reserved: 4 });
        const rows = await first.db.selectFrom('quota_reservations').select('id').execute();
        assert.deepEqual(rows.map((row) => row.id).sort(), ['a', 'b', 'c', 'd', 'e', 'g']);
      });

    if (backend === 'PostgreSQL')
      it('holds and settles groups of the same tokens on two nodes at once, in one statement each, without a deadlock or a lost image', async (t) => {
        const set = await setUp(t);
        if (set === undefined) return;
        const { first, second } = set;
        const tokens: string[] = [];
        for (let index = 0; index < 6; index++) tokens.push(await tokenWithQuota(first, 10_000));
        tokens.sort();
        // Each node's statements, with the transactions it fell back to and the errors it met.
        const nodes = [first, second].map((database) => {
          const errors: unknown[] = [];
          let transactions = 0;
          const statements: HotStatements = {
            dialect: 'postgres',
            rows: (statement, parameters) =>
              database.statements.rows(statement, parameters).catch((error: unknown) => {
                errors.push((error as { code?: unknown }).code);
                throw error;
              }),
            run: (statement, parameters) => database.statements.run(statement, parameters),
            transaction: (work) => {
              transactions += 1;
              return database.statements.transaction(work);
            },
          };
          return {
            quota: new SqlQuotaStore({ db: database.db, statements }),
            errors,
            transactions: () => transactions,
          };
        });
        /** Resolves once `count` statements starting with `prefix` wait for a row lock. */
        const waitingOnLocks = async (prefix: string, count: number) => {
          await eventually(
            async () => {
              const { rows } = await sql<{ waiting: string }>`
                select count(*) as waiting from pg_stat_activity
                where wait_event_type = 'Lock' and query like ${`${prefix}%`}`.execute(first.db);
              return Number(rows[0]?.waiting) >= count;
            },
            10_000,
            `${count} statements waiting on a lock together`,
            5,
          );
        };
        const perToken = 2;
        const rounds = 20;
        for (let round = 0; round < rounds; round++) {
          // The same tokens in opposite orders: the first node's group lists them forwards, the
          // second's backwards, so statements that locked in the order given would deadlock.
          const requests = nodes.flatMap((node, index) =>
            (index === 0 ? tokens : [...tokens].reverse()).flatMap((tokenId) =>
              Array.from({ length: perToken }, () => ({ node, tokenId, id: randomUUID() })),
            ),
          );
          // In the first round, a third session holds the middle token's row until both nodes'
          // statements wait for a lock, so that they surely overlap.
          const blocking = round === 0;
          const blockMiddle = () =>
            holdRows(first, sql`select id from tokens where id = ${tokens[3]} for update`);
          let blocker = blocking ? await blockMiddle() : undefined;
          const reserving = Promise.all(
            requests.map(({ node, tokenId, id }) =>
              node.quota.reserve({ id, tokenId, images: 1 }, 0, 60_000),
            ),
          );
          if (blocker !== undefined) {
            await waitingOnLocks('with holds', 2);
            await blocker.release();
          }
          assert.ok((await reserving).every(Boolean), `round ${round}: every reservation held`);
          blocker = blocking ? await blockMiddle() : undefined;
          const settling = Promise.all(
            requests.map(({ node, tokenId, id }) =>
              settleOn(node.quota, tokenId, randomUUID(), 1, { reservationId: id }),
            ),
          );
          if (blocker !== undefined) {
            await waitingOnLocks('with settling', 2);
            await blocker.release();
          }
          const settled = await settling;
          assert.ok(
            settled.every((outcome) => outcome === 'billed'),
            `round ${round}: ${settled.join(', ')}`,
          );
        }
        for (const node of nodes) {
          assert.deepEqual(node.errors, [], 'no statement failed (40P01 would be a deadlock)');
          assert.equal(node.transactions(), 0, 'every group took the one-statement paths');
        }
        for (const tokenId of tokens)
          assert.deepEqual(await standing(first, tokenId), {
            used: rounds * perToken * nodes.length,
            reserved: 0,
          });
        const rows = await first.db
          .selectFrom('usage_ledger')
          .select((eb) => eb.fn.countAll<string>().as('count'))
          .executeTakeFirstOrThrow();
        assert.equal(Number(rows.count), rounds * perToken * nodes.length * tokens.length);
      });

    if (backend === 'PostgreSQL')
      it("locks a one-statement group's tokens in the order the transactions sort their ids, whatever the database's collation", async (t) => {
        const set = await setUp(t);
        if (set === undefined) return;
        const { first } = set;
        // An ICU collation, as a database created under en_US.UTF-8 or ICU orders text: `tok_B`
        // after `tok_a`, where the transactions' JavaScript sort puts it before.
        await sql`alter table tokens alter column id type varchar(64) collate "und-x-icu"`.execute(
          first.db,
        );
        const ids = ['tok_B', 'tok_a', 'tok_-', 'tok__', 'tok_9'];
        for (const id of ids)
          await sql`insert into tokens (id, name, account, created_at) values (${id}, 'collation', 'acme', 0)`.execute(
            first.db,
          );
        const { rows } = await sql<{ id: string }>`
          with wanted as (select unnest(${ids}::text[]) as token_id),
          ${sql.raw(tokensLockedInIdOrder('select token_id from wanted'))}
          select id from locked`.execute(first.db);
        assert.deepEqual(
          rows.map((row) => row.id),
          [...ids].sort(),
        );
      });

    if (backend === 'PostgreSQL')
      it('finds the tokens and reservations of one-statement reservations and settlements through their primary keys, not by a scan', async (t) => {
        const set = await setUp(t, 10);
        if (set === undefined) return;
        const { first, tokenId, held, quota } = set;
        // Many requests in flight and many tokens: a scan of either table would read them all.
        await sql`insert into quota_reservations (id, token_id, images, created_at, expires_at)
          select 'in-flight-' || n, ${tokenId}, 1, 0, 0 from generate_series(1, 5000) as n`.execute(
          first.db,
        );
        await sql`insert into tokens (id, name, account, created_at)
          select 'tok-' || n, 'other', 'acme', 0 from generate_series(1, 5000) as n`.execute(
          first.db,
        );
        await sql`analyze quota_reservations`.execute(first.db);
        await sql`analyze tokens`.execute(first.db);
        assert.equal(await quota.reserve({ id: 'mine', tokenId, images: 1 }, 0, 60_000), true);
        const outcome = await settleOn(quota, tokenId, randomUUID(), 1, { reservationId: 'mine' });
        assert.equal(outcome, 'billed');
        const [reservation, settlement] = held.sent;
        assert.ok(reservation !== undefined && settlement !== undefined, 'one statement each');
        // The plan every later call reuses: PostgreSQL's generic plan of the prepared statement.
        const { rows: schema } = await sql<{
          name: string;
        }>`select current_schema() as name`.execute(first.db);
        const client = new pg.Client({ connectionString: TEST_POSTGRES_URL });
        await client.connect();
        t.after(() => client.end());
        await client.query(`set search_path = "${schema[0]?.name ?? ''}"`);
        await client.query('set plan_cache_mode = force_generic_plan');
        const genericPlan = async (name: string, sent: typeof reservation) => {
          await client.query(`prepare ${name} as ${sent.statement.postgres}`);
          const values = sent.parameters.map((value) =>
            value === null ? 'null' : client.escapeLiteral(String(value)),
          );
          const { rows: plan } = await client.query<{ 'QUERY PLAN': string }>(
            `explain execute ${name}(${values.join(', ')})`,
          );
          return plan.map((line) => line['QUERY PLAN']).join('\n');
        };
        const reserving = await genericPlan('reservation', reservation);
        assert.doesNotMatch(reserving, /Seq Scan on tokens\b/, reserving);
        assert.match(reserving, /tokens_pkey/, reserving);
        const settling = await genericPlan('settlement', settlement);
        assert.doesNotMatch(settling, /Seq Scan on (quota_reservations|tokens)\b/, settling);
        assert.match(settling, /quota_reservations_pkey/, settling);
        assert.match(settling, /tokens_pkey/, settling);
      });
  });
}
