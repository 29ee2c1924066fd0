import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it, type TestContext } from 'node:test';
import { type Books, booksOf, eventually } from '../faults/fault-rig.js';
import { BACKENDS, startServingGateway } from '../faults/serving-gateway.js';
import { startFakeDashScope } from '../fixtures/fake-dashscope.js';
import {
  closeMany,
  disagreements,
  INCREMENTAL_BODY,
  neverArrived,
  randomPlan,
  STREAM_HEADERS,
  streamAndClose,
} from '../helpers/random-close.js';
import { GENERATION_URL } from '../helpers/requests.js';
import { startTestGateway } from '../helpers/test-gateway.js';

// docs/admission.md, incremental streams: each image is handed to the caller's connection, then
// billed; a caller who hangs up at any moment is billed exactly the image events it received.

const RUNS = Number(process.env.RUNS ?? 200);
const AT_ONCE = 8;

interface Door {
  url: string;
  books: Books;
}

async function localEngineDoor(t: TestContext): Promise<Door> {
  const gateway = await startTestGateway({
    env: { HOST: '127.0.0.1', IMAGEGATE_LEDGER_FLUSH_MS: '20' },
  });
  t.after(() => gateway.close());
  const url = await gateway.listen();
  const { services, admission } = gateway;
  return { url, books: booksOf(services.tokenIssuer, admission.limits, admission.usage) };
}

async function dashScopeDoor(t: TestContext): Promise<Door> {
  const fake = await startFakeDashScope();
  t.after(() => fake.close());
  const [, sqlite] = BACKENDS[0] ?? [];
  assert.ok(sqlite);
  const serving = await startServingGateway(t, sqlite, fake);
  assert.ok(serving);
  // Every submission, the calibrating one included, produces the 4 images asked for.
  fake.script(...Array.from({ length: RUNS + 1 }, () => ({ kind: 'succeed' as const, images: 4 })));
  return { url: serving.url, books: serving.books };
}

const DOORS: [string, (t: TestContext) => Promise<Door>][] = [
  ['the local engine', localEngineDoor],
  ['a DashScope upstream', dashScopeDoor],
];

describe('incremental streams closed by their callers at random moments', () => {
  for (const [name, openDoor] of DOORS) {
    it(`bills exactly the image events each caller received, on ${name}`, async (t) => {
      const { url, books } = await openDoor(t);
      const token = await books.token({ imageQuota: 1_000_000 });
      const post = (requestId: string, plan: Parameters<typeof streamAndClose>[4]) =>
        streamAndClose(
          `${url}${GENERATION_URL}`,
          { authorization: token.authorization, ...STREAM_HEADERS },
          INCREMENTAL_BODY,
          requestId,
          plan,
        );
      // One stream read to its end: how long, and how many bytes, the random moments range over.
      const started = performance.now();
      const whole = await post(randomUUID(), { kind: 'bytes', count: Number.MAX_SAFE_INTEGER });
      assert.equal(whole.completed, true);
      const durationMs = performance.now() - started;
      const streams = await closeMany(RUNS, AT_ONCE, () =>
        post(randomUUID(), randomPlan(durationMs * 1.2, 3_000)),
      );
      // A caller gone before anything came back may have gone before its request was read.
      const answered = streams.filter((stream) => stream.bytes > 0 || stream.completed);
      await eventually(
        async () => {
          const final = new Set(
            (await books.rows(token.id))
              .filter((row) => row.status !== 0)
              .map((row) => row.requestId),
          );
          return (
            answered.every((stream) => final.has(stream.requestId)) &&
            (await books.standing(token.id)).reserved === 0
          );
        },
        60_000,
        'every stream has its final ledger row and no reservation is left',
      ).catch((error: unknown) => t.diagnostic(String(error)));
      const rows = new Map((await books.rows(token.id)).map((row) => [row.requestId, row]));
      const checks = streams.map((stream) => ({ stream, row: rows.get(stream.requestId) }));
      const found = disagreements(checks);
      const parsed = streams.reduce((sum, stream) => sum + stream.imagesParsed, 0);
      const { used } = await books.standing(token.id);
      t.diagnostic(
        `${RUNS} runs: ${found.overBilled.length} over-billed, ${found.underBilled.length} under-billed, ` +
          `${found.badRows.length} rows that disagree; ${parsed} images received, ${used - whole.imagesParsed} billed; ` +
          `${streams.filter((stream) => stream.completed).length} read to the end, ` +
          `${checks.filter((check) => neverArrived(check.row, check.stream)).length} without a row`,
      );
      for (const check of [...found.badRows, ...found.overBilled, ...found.underBilled].slice(0, 8))
        t.diagnostic(
          `${check.stream.requestId} parsed ${check.stream.imagesParsed} (completed ${check.stream.completed}, ${JSON.stringify(check.stream.plan)}): row ` +
            `${check.row?.status} ${check.row?.errorCode} received ${check.row?.imagesReceived} ` +
            `delivered ${check.row?.imagesDelivered} billed ${check.row?.imagesBilled}`,
        );
      assert.deepEqual(
        [found.overBilled.length, found.underBilled.length, found.badRows.length],
        [0, 0, 0],
      );
      assert.equal(used - whole.imagesParsed, parsed, "the token's quota says the same");
    });
  }
});
