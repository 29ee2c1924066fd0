import type { TestContext } from 'node:test';
import pg from 'pg';
import type { TaskFilter } from '../../src/domain/task.js';
import type { DatabaseTarget } from '../../src/store/database/database.js';
import { TASK_QUEUE_LOCK } from '../../src/store/task-store.js';
import { type FakeDashScope, startFakeDashScope } from '../fixtures/fake-dashscope.js';
import { dashScopeChannelEnv, eventually, nodeDatabaseUrl } from '../faults/fault-rig.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';

/** A gateway with a DashScope channel on a fake, listening, and the caller's token. */
export interface SubmissionRig {
  gateway: TestGateway;
  fake: FakeDashScope;
  url: string;
  token: string;
  tokenId: string;
  /** A connection of the test's own to the gateway's PostgreSQL schema, closed when it ends. */
  locker: () => Promise<pg.Client>;
}

/**
 * A gateway on `target` whose statements wait up to 20 s for a lock the test holds, with a
 * DashScope channel on a fake, and a caller's token with a quota of `imageQuota`.
 */
export async function submissionRig(
  t: TestContext,
  target: DatabaseTarget,
  options: { env?: Record<string, string>; imageQuota?: number } = {},
): Promise<SubmissionRig> {
  const fake = await startFakeDashScope();
  t.after(() => fake.close());
  const gateway = await startTestGateway({
    database: target,
    env: {
      IMAGEGATE_TASK_POLL_MS: '50',
      IMAGEGATE_LEDGER_FLUSH_MS: '50',
      IMAGEGATE_SHUTDOWN_TIMEOUT_MS: '0',
      // Rows stay locked until the callers the test lets leave have left; statements wait.
      IMAGEGATE_DB_LOCK_TIMEOUT_MS: '20000',
      IMAGEGATE_DB_STATEMENT_TIMEOUT_MS: '20000',
      ...(await dashScopeChannelEnv(t, fake)),
      ...options.env,
    },
  });
  t.after(() => gateway.close());
  const url = await gateway.listen();
  const { token, record } = await gateway.services.tokenIssuer.issue({
    name: 'leaving',
    account: 'leaving-co',
    admin: false,
    expiresInSeconds: undefined,
  });
  await gateway.admission.limits.update(record.id, { imageQuota: options.imageQuota ?? 100 });
  const locker = async () => {
    if (target.kind !== 'postgres') throw new Error('rows are locked on PostgreSQL only');
    const client = new pg.Client({ connectionString: nodeDatabaseUrl(target) });
    await client.connect();
    t.after(() => client.end());
    return client;
  };
  return { gateway, fake, url, token, tokenId: record.id, locker };
}

/** Opens a transaction on `client` holding the rows `query` selects FOR UPDATE. */
export async function lockRows(
  client: pg.Client,
  query: string,
  parameters: unknown[],
): Promise<void> {
  await client.query('begin');
  await client.query(`${query} for update`, parameters);
}

/**
 * Opens a transaction on `client` holding the lock that task submissions take to count the
 * queue and insert (src/store/task-store.ts, PostgresTaskStore.lockQueue).
 */
export async function lockTaskQueue(client: pg.Client): Promise<void> {
  await client.query('begin');
  await client.query("select pg_advisory_xact_lock($1, 'tasks'::regclass::oid::integer)", [
    TASK_QUEUE_LOCK,
  ]);
}

/**
 * Resolves once at least `count` statements of the gateway wait on a lock `client` holds, or on
 * a statement that waits on it (waiters for one row queue behind the first of them).
 */
export async function someoneWaitsOn(client: pg.Client, what: string, count = 1): Promise<void> {
  const holder = Number((await client.query('select pg_backend_pid() as pid')).rows[0].pid);
  await eventually(
    async () => {
      // `client` is inside the transaction that holds the lock, where PostgreSQL reads the activity
      // view once and keeps it: a pool connection the gateway opened after the first look would
      // stay unseen, however long its statement waited.
      await client.query('select pg_stat_clear_snapshot()');
      return (
        Number(
          (
            await client.query(
              `with recursive waiting(pid) as (
               select pid from pg_stat_activity where $1 = any(pg_blocking_pids(pid))
               union
               select activity.pid from pg_stat_activity activity
                 join waiting on waiting.pid = any(pg_blocking_pids(activity.pid))
             )
             select count(*) as blocked from waiting`,
              [holder],
            )
          ).rows[0].blocked,
        ) >= count
      );
    },
    20_000,
    what,
  );
}

/** Resolves once the gateway has seen every caller's connection close. */
export async function everyCallerLeft(gateway: TestGateway): Promise<void> {
  await eventually(
    async () =>
      (await new Promise<number>((resolve, reject) => {
        gateway.app.server.getConnections((error, count) =>
          error ? reject(error) : resolve(count),
        );
      })) === 0,
    20_000,
    'the gateway sees every caller leave',
  );
}

/** A filter that matches every task. */
export function everyTask(): TaskFilter {
  return {
    owner: undefined,
    tokenId: undefined,
    state: undefined,
    model: undefined,
    submittedFrom: undefined,
    submittedUntil: undefined,
  };
}
