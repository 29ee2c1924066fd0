import { randomUUID } from 'node:crypto';
import type { TestContext } from 'node:test';
import { type Books, booksOf, eventually } from '../faults/fault-rig.js';
import { BACKENDS, startServingGateway } from '../faults/serving-gateway.js';
import { startFakeDashScope } from '../fixtures/fake-dashscope.js';
import {
  type CloseCheck,
  type ClosePlan,
  ClosingCallers,
  closeMany,
  INCREMENTAL_BODY,
  randomPlan,
  STREAM_HEADERS,
} from './random-close.js';
import { GENERATION_URL } from './requests.js';
import { startTestGateway } from './test-gateway.js';

/** What cleans up after a door: a test's context, or a bench's list of closers. */
export type Cleanup = Pick<TestContext, 'after'>;

/** A gateway serving incremental streams, and its books. */
export interface Door {
  url: string;
  books: Books;
}

/** A gateway whose engine is the built-in local one, on SQLite. */
export async function localEngineDoor(cleanup: Cleanup): Promise<Door> {
  const gateway = await startTestGateway({
    env: { HOST: '127.0.0.1', IMAGEGATE_LEDGER_FLUSH_MS: '20' },
  });
  cleanup.after(() => gateway.close());
  const url = await gateway.listen();
  const { services, admission } = gateway;
  return { url, books: booksOf(services.tokenIssuer, admission.limits, admission.usage) };
}

/**
 * A gateway whose one channel is a fake DashScope that answers `submissions` with 4 images, on
 * SQLite or PostgreSQL (`backend`); undefined when that database is not available.
 */
export async function dashScopeDoor(
  cleanup: Cleanup,
  submissions: number,
  backend: 'SQLite' | 'PostgreSQL' = 'SQLite',
): Promise<Door | undefined> {
  const fake = await startFakeDashScope();
  cleanup.after(() => fake.close());
  const target = BACKENDS.find(([name]) => name === backend)?.[1];
  if (target === undefined) throw new Error(`no ${backend} backend`);
  const serving = await startServingGateway(cleanup as TestContext, target, fake);
  if (serving === undefined) return undefined;
  fake.script(
    ...Array.from({ length: submissions }, () => ({ kind: 'succeed' as const, images: 4 })),
  );
  return { url: serving.url, books: serving.books };
}

/** Every stream's check, the calibrating stream's images, and the token's used quota. */
export interface RandomCloses {
  checks: CloseCheck[];
  /** Images billed to the token for the random streams (the calibrating one taken out). */
  billed: number;
  /** The wait for every row timed out: some rows are missing or still stand-ins. */
  unsettled: boolean;
}

/**
 * Streams `runs` incremental requests at `door`, `atOnce` at a time, each hung up on at a random
 * moment, and reads each one's ledger row once every stream that got an answer has its final row.
 */
export async function closeAtRandom(
  cleanup: Cleanup,
  door: Door,
  runs: number,
  atOnce: number,
): Promise<RandomCloses> {
  const { url, books } = door;
  const token = await books.token({ imageQuota: 1_000_000 });
  const callers = new ClosingCallers();
  cleanup.after(() => callers.close());
  const post = (plan: ClosePlan) =>
    callers.call({
      url: `${url}${GENERATION_URL}`,
      headers: { authorization: token.authorization, ...STREAM_HEADERS },
      body: INCREMENTAL_BODY,
      requestId: randomUUID(),
      plan,
    });
  // One stream read to its end: how long, and how many bytes, the random moments range over.
  const started = performance.now();
  const whole = await post({ kind: 'bytes', count: Number.MAX_SAFE_INTEGER, how: 'destroy' });
  const durationMs = performance.now() - started;
  const streams = await closeMany(runs, atOnce, () =>
    post(randomPlan(durationMs * 1.2, whole.bytes * 1.2)),
  );
  // A caller gone before anything came back may have gone before its request was read.
  const answered = streams.filter((stream) => stream.bytes > 0 || stream.completed);
  let unsettled = false;
  await eventually(
    async () => {
      const final = new Set(
        (await books.rows(token.id)).filter((row) => row.status !== 0).map((row) => row.requestId),
      );
      return (
        answered.every((stream) => final.has(stream.requestId)) &&
        (await books.standing(token.id)).reserved === 0
      );
    },
    60_000,
    'every stream has its final ledger row and no reservation is left',
  ).catch(() => {
    unsettled = true;
  });
  const rows = new Map((await books.rows(token.id)).map((row) => [row.requestId, row]));
  const { used } = await books.standing(token.id);
  return {
    checks: streams.map((stream) => ({ stream, row: rows.get(stream.requestId) })),
    billed: used - whole.imagesParsed,
    unsettled,
  };
}
