import {
  type Kysely,
  type Selectable,
  type SelectQueryBuilder,
  sql,
  type Transaction,
} from 'kysely';
import type {
  NewTask,
  TaskEnd,
  TaskFence,
  TaskFilter,
  TaskRecord,
  TaskState,
} from '../domain/task.js';
import type { UsageRow } from '../domain/usage-row.js';
import { endClaim, forgetPublished, type HeldClaim } from './billing/claim-fence.js';
import { InlineReads, type LongReads } from './database/long-reads.js';
import type { DatabaseSchema } from './database/schema.js';
import type { TasksTable } from './database/task-schema.js';
import { writeLedgerRowsIn } from './billing/ledger-writer.js';
import { Statement, type StatementRunner } from './billing/hot-statements.js';

/** The Idempotency-Key claim a submission runs under: the task's id is published under it. */
export interface SubmissionClaim extends HeldClaim {
  requestId: string;
  /** JSON published under the key, replayed to repeats of the submission. */
  result: string;
}

/**
 * The state a task must still be in for an ending to take effect. RUNNING `lapsedBy`: only if its
 * runner's lease had run out by then (another node ends it). PENDING `held`: only if it is still
 * held for the handover of its id; `lapsedBy`: only if that hold had run out by then.
 */
export type TaskExpectation =
  | { state: 'PENDING'; held?: boolean; lapsedBy?: number | undefined }
  | { state: 'RUNNING'; runner: string; lapsedBy?: number | undefined };

/** How many PENDING tasks may wait: in all, and of the owner of the task being stored. */
export interface QueueBounds {
  total: number;
  perOwner: number;
}

/** What became of a submission: stored, or refused because a bound of the queue was reached. */
export type QueuePlace = 'stored' | 'queue-full' | 'owner-full';

/** A submission whose Idempotency-Key claim was taken over meanwhile: nothing was stored. */
export class SubmissionClaimLost extends Error {
  constructor() {
    super('the Idempotency-Key claim of this submission lapsed');
  }
}

/**
 * Durable asynchronous tasks, shared by every node on the database. Every change of state is one
 * conditional statement (or transaction), so two nodes can never both claim, end or cancel one
 * task.
 */
export interface TaskStore {
  /**
   * Stores a PENDING task unless the queue, or its owner's part of it, already holds its bound;
   * decided atomically against every other submission, on any node. With a claim, publishes the
   * stored task under its Idempotency-Key too. The task is held until `heldUntil`: no node
   * claims it until `handOver` (its id reached the caller), and one that is never handed over is
   * found by `lapsed` once the hold runs out.
   */
  insert(
    task: NewTask,
    claim: SubmissionClaim | undefined,
    bounds: QueueBounds,
    heldUntil: number,
  ): Promise<QueuePlace>;
  /** Ends the hold of a PENDING task: any node may claim it now. False when it was not held. */
  handOver(id: string): Promise<boolean>;
  find(id: string): Promise<TaskRecord | undefined>;
  /** Newest first. `signal`: the caller left; a read that has not begun is dropped. */
  list(
    filter: TaskFilter,
    offset: number,
    limit: number,
    signal?: AbortSignal,
  ): Promise<TaskRecord[]>;
  count(filter: TaskFilter, signal?: AbortSignal): Promise<number>;
  /**
   * Takes the oldest PENDING task not held for its handover for `runner` (RUNNING, leased until
   * `leaseUntil`), if any.
   */
  claim(runner: string, now: number, leaseUntil: number): Promise<TaskRecord | undefined>;
  /** Pushes the leases of these tasks forward while `runner` still holds them. */
  renewLeases(ids: readonly string[], runner: string, leaseUntil: number): Promise<void>;
  /** Keeps the quota reservations of every unfinished task alive, whichever node took them. */
  renewReservations(expiresAt: number): Promise<void>;
  /**
   * Ends a task that did not succeed, if it is still as expected, and writes its ledger row (its
   * stand-in, if any, is replaced: `writeLedgerRowsIn`) in the same transaction. False when it was not as expected.
   * `forget`: the Idempotency-Key the submission published the task under, forgotten with it.
   */
  end(
    id: string,
    expected: TaskExpectation,
    end: TaskEnd,
    row: UsageRow,
    forget?: HeldClaim,
  ): Promise<boolean>;
  /**
   * Pushes this runner's lease forward if it still runs the task (not ended, by anyone): one
   * statement, asked before each step that spends. False when the claim is lost. A lease that
   * lapsed but that no node acted on is this runner's again: an ending needs it lapsed.
   */
  keepClaim(id: string, runner: string, leaseUntil: number): Promise<boolean>;
  /**
   * RUNNING tasks whose runner's lease has lapsed (their node died or stalled), and PENDING ones
   * whose hold for the handover of their id lapsed (their node died or stalled before it).
   */
  lapsed(now: number, limit: number): Promise<TaskRecord[]>;
  /** Deletes at most `limit` finished tasks past their expiry; returns how many. */
  deleteExpired(now: number, limit: number): Promise<number>;
}

const IDS_PER_STATEMENT = 500;
/** First key of the queue's advisory lock on PostgreSQL: "tq" in ASCII, a tag for this lock alone. */
export const TASK_QUEUE_LOCK = 0x7471;
const FINISHED: readonly TaskState[] = ['SUCCEEDED', 'FAILED', 'CANCELED'];

type TaskQuery = SelectQueryBuilder<DatabaseSchema, 'tasks', object>;

/** Everything but the claim, which each database does its own way. */
abstract class SqlTaskStore implements TaskStore {
  /**
   * `listingReads` runs the listings, which callers page through with an offset over every task
   * of their day: off the event loop on the server's SQLite.
   */
  constructor(
    protected readonly db: Kysely<DatabaseSchema>,
    private readonly listingReads: LongReads = new InlineReads(db),
  ) {}

  abstract claim(runner: string, now: number, leaseUntil: number): Promise<TaskRecord | undefined>;

  /**
   * Makes the transaction the only submission counting the queue until it ends, on every node;
   * each database does it its own way.
   */
  protected abstract lockQueue(trx: Transaction<DatabaseSchema>): Promise<void>;

  async insert(
    task: NewTask,
    claim: SubmissionClaim | undefined,
    bounds: QueueBounds,
    heldUntil: number,
  ): Promise<QueuePlace> {
    return this.db.transaction().execute(async (trx) => {
      await this.lockQueue(trx);
      const waiting = await trx
        .selectNoFrom((eb) => [
          eb
            .selectFrom('tasks')
            .select(eb.fn.countAll().as('count'))
            .where('state', '=', 'PENDING')
            .as('total'),
          eb
            .selectFrom('tasks')
            .select(eb.fn.countAll().as('count'))
            .where('state', '=', 'PENDING')
            .where('owner', '=', task.owner)
            .as('owned'),
        ])
        .executeTakeFirstOrThrow();
      if (Number(waiting.owned) >= bounds.perOwner) return 'owner-full';
      if (Number(waiting.total) >= bounds.total) return 'queue-full';
      await trx
        .insertInto('tasks')
        .values({
          id: task.id,
          request_id: task.requestId,
          ledger_row_id: task.ledgerRowId,
          owner: task.owner,
          token_id: task.tokenId ?? null,
          account: task.account,
          issuer: task.issuer,
          model: task.model,
          request: task.request,
          workspace: task.workspace ?? null,
          resolve_uploads: task.resolveUploads ? 1 : 0,
          reservation_id: task.reservationId ?? null,
          state: 'PENDING',
          lease_until: heldUntil,
          submitted_at: task.submittedAt,
          expires_at: task.expiresAt,
        })
        .execute();
      if (claim !== undefined && !(await endClaim(trx, claim, claim)))
        throw new SubmissionClaimLost();
      return 'stored';
    });
  }

  async handOver(id: string): Promise<boolean> {
    const result = await this.db
      .updateTable('tasks')
      .set({ lease_until: null })
      .where('id', '=', id)
      .where('state', '=', 'PENDING')
      .where('lease_until', 'is not', null)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async keepClaim(id: string, runner: string, leaseUntil: number): Promise<boolean> {
    const result = await this.db
      .updateTable('tasks')
      .set({ lease_until: leaseUntil })
      .where('id', '=', id)
      .where('state', '=', 'RUNNING')
      .where('runner', '=', runner)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  async find(id: string): Promise<TaskRecord | undefined> {
    const row = await this.db
      .selectFrom('tasks')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirst();
    return row === undefined ? undefined : fromRow(row);
  }

  async list(
    filter: TaskFilter,
    offset: number,
    limit: number,
    signal?: AbortSignal,
  ): Promise<TaskRecord[]> {
    const rows = await this.listingReads.all(
      filtered(this.db.selectFrom('tasks'), filter)
        .selectAll()
        .orderBy('submitted_at', 'desc')
        .orderBy('id')
        .limit(limit)
        .offset(offset),
      signal,
    );
    return rows.map(fromRow);
  }

  async count(filter: TaskFilter, signal?: AbortSignal): Promise<number> {
    const [row] = await this.listingReads.all(
      filtered(this.db.selectFrom('tasks'), filter).select((eb) =>
        eb.fn.countAll<number>().as('count'),
      ),
      signal,
    );
    return Number(row?.count ?? 0);
  }

  async renewLeases(ids: readonly string[], runner: string, leaseUntil: number): Promise<void> {
    for (let start = 0; start < ids.length; start += IDS_PER_STATEMENT) {
      await this.db
        .updateTable('tasks')
        .set({ lease_until: leaseUntil })
        .where('id', 'in', ids.slice(start, start + IDS_PER_STATEMENT))
        .where('state', '=', 'RUNNING')
        .where('runner', '=', runner)
        .execute();
    }
  }

  async renewReservations(expiresAt: number): Promise<void> {
    await this.db
      .updateTable('quota_reservations')
      .set({ expires_at: expiresAt })
      .where('id', 'in', (eb) =>
        eb
          .selectFrom('tasks')
          .select('reservation_id')
          .where('state', 'in', ['PENDING', 'RUNNING'])
          .where('reservation_id', 'is not', null),
      )
      .execute();
  }

  async end(
    id: string,
    expected: TaskExpectation,
    end: TaskEnd,
    row: UsageRow,
    forget?: HeldClaim,
  ): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      let update = trx
        .updateTable('tasks')
        .set({
          state: end.state,
          error_code: end.errorCode,
          error_message: end.errorMessage,
          ended_at: end.endedAt,
          expires_at: end.expiresAt,
          lease_until: null,
        })
        .where('id', '=', id)
        .where('state', '=', expected.state);
      if (expected.state === 'RUNNING') update = update.where('runner', '=', expected.runner);
      if (expected.state === 'PENDING' && expected.held === true)
        update = update.where('lease_until', 'is not', null);
      if (expected.lapsedBy !== undefined)
        update = update.where('lease_until', '<=', expected.lapsedBy);
      const ended = await update.executeTakeFirst();
      if (ended.numUpdatedRows === 0n) return false;
      if (forget !== undefined) await forgetPublished(trx, forget, row.requestId);
      await writeLedgerRowsIn(trx, [row]);
      return true;
    });
  }

  async lapsed(now: number, limit: number): Promise<TaskRecord[]> {
    const rows = await this.db
      .selectFrom('tasks')
      .selectAll()
      .where('state', 'in', ['RUNNING', 'PENDING'])
      .where('lease_until', '<=', now)
      .orderBy('lease_until')
      .limit(limit)
      .execute();
    return rows.map(fromRow);
  }

  async deleteExpired(now: number, limit: number): Promise<number> {
    const result = await this.db
      .deleteFrom('tasks')
      // Checked again on the row deleted, not only on the one the subquery chose.
      .where('expires_at', '<=', now)
      .where('state', 'in', FINISHED)
      .where('id', 'in', (eb) =>
        eb
          .selectFrom('tasks')
          .select('id')
          .where('expires_at', '<=', now)
          .where('state', 'in', FINISHED)
          .limit(limit),
      )
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}

/** SQLite: one conditional UPDATE is atomic, as the database has a single writer. */
export class SqliteTaskStore extends SqlTaskStore {
  /** Transactions begin immediate: holding the one write lock, this one is alone already. */
  protected async lockQueue(): Promise<void> {}

  async claim(runner: string, now: number, leaseUntil: number): Promise<TaskRecord | undefined> {
    const row = await this.db
      .updateTable('tasks')
      .set({ state: 'RUNNING', runner, lease_until: leaseUntil, scheduled_at: now })
      .where('id', '=', (eb) =>
        eb
          .selectFrom('tasks')
          .select('id')
          .where('state', '=', 'PENDING')
          .where('lease_until', 'is', null)
          .orderBy('submitted_at')
          .orderBy('id')
          .limit(1),
      )
      .where('state', '=', 'PENDING')
      .where('lease_until', 'is', null)
      .returningAll()
      .executeTakeFirst();
    return row === undefined ? undefined : fromRow(row);
  }
}

/**
 * PostgreSQL: the oldest PENDING row is locked with FOR UPDATE SKIP LOCKED, so nodes claiming at
 * once each take a different task instead of queueing on the same row.
 */
export class PostgresTaskStore extends SqlTaskStore {
  /**
   * A transaction-scoped advisory lock, keyed by the tasks table's oid so that deployments in
   * other schemas of the database do not share it. Under READ COMMITTED each statement sees what
   * was committed before it began, and the lock is released only after its holder's commit, so
   * the next holder's count includes every task stored before it.
   */
  protected async lockQueue(trx: Transaction<DatabaseSchema>): Promise<void> {
    await sql`select pg_advisory_xact_lock(${sql.lit(TASK_QUEUE_LOCK)}, 'tasks'::regclass::oid::integer)`.execute(
      trx,
    );
  }

  async claim(runner: string, now: number, leaseUntil: number): Promise<TaskRecord | undefined> {
    return this.db.transaction().execute(async (trx) => {
      const next = await trx
        .selectFrom('tasks')
        .select('id')
        .where('state', '=', 'PENDING')
        .where('lease_until', 'is', null)
        .orderBy('submitted_at')
        .orderBy('id')
        .limit(1)
        .forUpdate()
        .skipLocked()
        .executeTakeFirst();
      if (next === undefined) return undefined;
      const row = await trx
        .updateTable('tasks')
        .set({ state: 'RUNNING', runner, lease_until: leaseUntil, scheduled_at: now })
        .where('id', '=', next.id)
        .where('state', '=', 'PENDING')
        .where('lease_until', 'is', null)
        .returningAll()
        .executeTakeFirst();
      return row === undefined ? undefined : fromRow(row);
    });
  }
}

/** The store for the database kind the gateway runs on. */
export function createTaskStore(
  kind: 'sqlite' | 'postgres',
  db: Kysely<DatabaseSchema>,
  listingReads?: LongReads,
): TaskStore {
  return kind === 'sqlite'
    ? new SqliteTaskStore(db, listingReads)
    : new PostgresTaskStore(db, listingReads);
}

const succeed = new Statement(
  `update tasks set state = 'SUCCEEDED', result = ?, ended_at = ?, expires_at = ?, lease_until = null
    where id = ? and state = 'RUNNING' and runner = ?`,
);

/**
 * Inside a settlement's transaction: the task ends SUCCEEDED with its result, if this node still
 * runs it. False when it does not (its lease lapsed and another node ended it): nothing is billed.
 */
export async function completeTask(
  runner: StatementRunner,
  task: TaskFence & { result: string; endedAt: number; expiresAt: number },
): Promise<boolean> {
  const done = await runner.run(succeed, [
    task.result,
    task.endedAt,
    task.expiresAt,
    task.id,
    task.runner,
  ]);
  return done > 0;
}

function filtered(query: TaskQuery, filter: TaskFilter): TaskQuery {
  let result = query;
  if (filter.owner !== undefined) result = result.where('owner', '=', filter.owner);
  if (filter.tokenId !== undefined) result = result.where('token_id', '=', filter.tokenId);
  if (filter.state !== undefined) result = result.where('state', '=', filter.state);
  if (filter.model !== undefined) result = result.where('model', '=', filter.model);
  if (filter.submittedFrom !== undefined)
    result = result.where('submitted_at', '>=', filter.submittedFrom);
  if (filter.submittedUntil !== undefined)
    result = result.where('submitted_at', '<=', filter.submittedUntil);
  return result;
}

function fromRow(row: Selectable<TasksTable>): TaskRecord {
  return {
    id: row.id,
    requestId: row.request_id,
    ledgerRowId: row.ledger_row_id,
    owner: row.owner,
    tokenId: row.token_id ?? undefined,
    account: row.account,
    issuer: row.issuer,
    model: row.model,
    request: row.request,
    workspace: row.workspace ?? undefined,
    resolveUploads: Number(row.resolve_uploads) === 1,
    reservationId: row.reservation_id ?? undefined,
    state: row.state,
    submittedAt: Number(row.submitted_at),
    scheduledAt: optionalNumber(row.scheduled_at),
    endedAt: optionalNumber(row.ended_at),
    result: row.result ?? undefined,
    errorCode: row.error_code ?? undefined,
    errorMessage: row.error_message ?? undefined,
    runner: row.runner ?? undefined,
    leaseUntil: optionalNumber(row.lease_until),
    expiresAt: Number(row.expires_at),
  };
}

function optionalNumber(value: number | null): number | undefined {
  return value === null ? undefined : Number(value);
}
