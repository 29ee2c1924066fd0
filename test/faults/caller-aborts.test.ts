import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { describe, it } from 'node:test';
import pg from 'pg';
import { MODEL_A } from '../../src/domain/models.js';
import type { UsageRow } from '../../src/domain/usage-row.js';
import { type FakeDashScope, startFakeDashScope } from '../fixtures/fake-dashscope.js';
import { GENERATION_URL } from '../helpers/requests.js';
import { connectionsOpen } from '../helpers/server-connections.js';
import { quietFor } from '../helpers/waits.js';
import { type Books, eventually, generate, generationBody, probe } from './fault-rig.js';
import { BACKENDS, type ServingGateway, startServingGateway } from './serving-gateway.js';

const IMAGES = 2;
const UPSTREAM_DELAY_MS = 1000;

/** A generation whose caller can hang up mid-request, as a client's timeout or crash would. */
function hangUpAble(baseUrl: string, authorization: string, requestId: string) {
  const request = httpRequest(`${baseUrl}${GENERATION_URL}`, {
    method: 'POST',
    headers: {
      authorization,
      'content-type': 'application/json',
      'x-request-id': requestId,
    },
  });
  const answered = new Promise<number | 'hung up'>((resolve) => {
    request.on('response', (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    request.on('close', () => resolve('hung up'));
  });
  request.on('error', () => undefined);
  request.end(JSON.stringify(generationBody(MODEL_A, IMAGES)));
  return { hangUp: () => request.destroy(), answered };
}

/** After a caller hung up: the gateway serves the next request as usual, billing only that one. */
async function servesNext(
  serving: ServingGateway,
  fake: FakeDashScope,
  token: { id: string; authorization: string },
) {
  assert.equal((await probe(serving.url, '/healthz')).status, 200);
  fake.script({ kind: 'succeed', images: IMAGES, imageCount: IMAGES });
  const next = await generate(serving.url, {
    authorization: token.authorization,
    body: generationBody(MODEL_A, IMAGES),
    requestId: 'next',
  });
  assert.equal(next.status, 200, next.code);
  assert.equal(next.imageUrls.length, IMAGES);
  assert.deepEqual(await serving.books.standing(token.id), { used: IMAGES, reserved: 0 });
}

/** The columns of a row that say how the request ended and what it cost. */
function endingOf(row: UsageRow) {
  return {
    requestId: row.requestId,
    status: row.status,
    errorCode: row.errorCode,
    channel: row.channel,
    imagesRequested: row.imagesRequested,
    imagesReported: row.imagesReported,
    imagesReceived: row.imagesReceived,
    imagesDelivered: row.imagesDelivered,
    imagesBilled: row.imagesBilled,
    costMicros: row.costMicros,
  };
}

/** Waits until the hung-up request has ended: its reservation freed, its row written. */
async function afterHangUp(books: Books, tokenId: string): Promise<UsageRow[]> {
  await eventually(
    async () => (await books.standing(tokenId)).reserved === 0,
    5000,
    'reservation released',
  );
  await eventually(async () => (await books.rows(tokenId)).length === 1, 5000, 'its row');
  await quietFor(UPSTREAM_DELAY_MS + 200, 'no late bill once the upstream would have answered');
  assert.deepEqual(await books.standing(tokenId), { used: 0, reserved: 0 });
  return books.rows(tokenId);
}

for (const [backend, target] of BACKENDS) {
  describe(`a caller that hangs up mid-request (${backend})`, () => {
    it('while the upstream is still working: the row says 499 CallerGone, nothing is billed, the reservation is released', async (t) => {
      const fake = await startFakeDashScope();
      t.after(() => fake.close());
      const serving = await startServingGateway(t, target, fake);
      if (serving === undefined) return;
      const token = await serving.books.token({ imageQuota: 10 });
      fake.script({
        kind: 'succeed',
        images: IMAGES,
        imageCount: IMAGES,
        delayMs: UPSTREAM_DELAY_MS,
      });
      const call = hangUpAble(serving.url, token.authorization, 'hung-up-early');
      await eventually(() => fake.submissions().length === 1, 5000, 'the upstream is working');
      call.hangUp();
      assert.equal(await call.answered, 'hung up');
      const rows = await afterHangUp(serving.books, token.id);
      t.diagnostic(`row: ${JSON.stringify(endingOf(rows[0] as UsageRow))}`);
      assert.deepEqual(rows.map(endingOf), [
        {
          requestId: 'hung-up-early',
          status: 499,
          errorCode: 'CallerGone',
          // Recorded once the upstream's answer, read to its end, said what it produced.
          channel: 'fake-dashscope',
          imagesRequested: IMAGES,
          imagesReported: IMAGES,
          imagesReceived: IMAGES,
          imagesDelivered: 0,
          imagesBilled: 0,
          costMicros: 0,
        },
      ]);
      await servesNext(serving, fake, token);
    });

    it('three callers who hang up while the upstream works: its answers are read to the end and the rows record what it reported, nothing billed', async (t) => {
      const fake = await startFakeDashScope();
      t.after(() => fake.close());
      const serving = await startServingGateway(t, target, fake);
      if (serving === undefined) return;
      const token = await serving.books.token({ imageQuota: 10 });
      const callers = ['gone-1', 'gone-2', 'gone-3'];
      fake.script(
        ...callers.map(() => ({
          kind: 'succeed' as const,
          images: IMAGES,
          imageCount: IMAGES,
          delayMs: UPSTREAM_DELAY_MS,
        })),
      );
      const calls = callers.map((id) => hangUpAble(serving.url, token.authorization, id));
      await eventually(
        () => fake.submissions().length === callers.length,
        5000,
        'the upstream is working on every request',
      );
      for (const call of calls) call.hangUp();
      for (const call of calls) assert.equal(await call.answered, 'hung up');
      await eventually(
        async () => (await serving.books.rows(token.id)).length === callers.length,
        10_000,
        'a row for each request',
      );
      const rows = await serving.books.rows(token.id);
      const books = {
        upstreamAnswersReadWhole: fake.completed().length,
        imagesTheUpstreamReported: fake.completed().reduce((sum, count) => sum + count, 0),
        imagesReportedInRows: rows.reduce((sum, row) => sum + (row.imagesReported ?? 0), 0),
        imagesBilled: rows.reduce((sum, row) => sum + row.imagesBilled, 0),
        endings: rows.map((row) => `${row.status} ${row.errorCode}`),
      };
      t.diagnostic(JSON.stringify(books));
      assert.deepEqual(books, {
        upstreamAnswersReadWhole: callers.length,
        imagesTheUpstreamReported: callers.length * IMAGES,
        imagesReportedInRows: callers.length * IMAGES,
        imagesBilled: 0,
        endings: callers.map(() => '499 CallerGone'),
      });
      assert.deepEqual(await serving.books.standing(token.id), { used: 0, reserved: 0 });
    });

    it('while the generated images are being fetched from the upstream: nothing is billed, and the row records the images the upstream reported and sent', async (t) => {
      const fake = await startFakeDashScope();
      t.after(() => fake.close());
      const serving = await startServingGateway(t, target, fake);
      if (serving === undefined) return;
      const token = await serving.books.token({ imageQuota: 10 });
      fake.script({
        kind: 'succeed',
        images: IMAGES,
        imageCount: IMAGES,
        downloadDelayMs: UPSTREAM_DELAY_MS,
      });
      const call = hangUpAble(serving.url, token.authorization, 'hung-up-fetching');
      await eventually(
        () => fake.requests.some((request) => request.path.startsWith('/slow-')),
        5000,
        'the gateway is fetching the generated images',
      );
      call.hangUp();
      assert.equal(await call.answered, 'hung up');
      const rows = await afterHangUp(serving.books, token.id);
      t.diagnostic(`row: ${JSON.stringify(endingOf(rows[0] as UsageRow))}`);
      assert.deepEqual(rows.map(endingOf), [
        {
          requestId: 'hung-up-fetching',
          status: 499,
          errorCode: 'CallerGone',
          channel: 'fake-dashscope',
          imagesRequested: IMAGES,
          imagesReported: IMAGES,
          imagesReceived: IMAGES,
          imagesDelivered: 0,
          imagesBilled: 0,
          costMicros: 0,
        },
      ]);
      await servesNext(serving, fake, token);
    });
  });
}

it('a caller that hangs up after the images arrived, while the settlement waits for a lock (PostgreSQL): the settlement sees the caller gone and bills nothing', async (t) => {
  const fake = await startFakeDashScope();
  t.after(() => fake.close());
  const postgres = BACKENDS.find(([name]) => name === 'PostgreSQL')?.[1];
  assert.ok(postgres !== undefined);
  // Upstream URLs pass through: the settlement follows the upstream's answer at once.
  const serving = await startServingGateway(t, postgres, fake, { passThroughUrls: true });
  if (serving === undefined || serving.postgres === undefined) return;
  const token = await serving.books.token({ imageQuota: 10 });
  const blocker = new pg.Client({ connectionString: serving.postgres.url });
  await blocker.connect();
  t.after(() => blocker.end());
  const schema = serving.postgres.schema as string;

  fake.script({ kind: 'succeed', images: IMAGES, imageCount: IMAGES, delayMs: 300 });
  const call = hangUpAble(serving.url, token.authorization, 'hung-up-settling');
  await eventually(() => fake.submissions().length === 1, 5000, 'the upstream is working');
  // The request's reservation is locked, so its settlement (which deletes it first) waits.
  await blocker.query('begin');
  const locked = await blocker.query(
    `select id from "${schema}".quota_reservations where token_id = $1 for update`,
    [token.id],
  );
  assert.equal(locked.rowCount, 1);
  const { rows: me } = await blocker.query<{ pid: number }>('select pg_backend_pid() as pid');
  // Watched from another session: inside a transaction, statistics views hold still.
  const observer = new pg.Client({ connectionString: serving.postgres.url });
  await observer.connect();
  t.after(() => observer.end());
  await eventually(
    async () =>
      (
        await observer.query(
          'select 1 from pg_stat_activity where $1 = any(pg_blocking_pids(pid))',
          [me[0]?.pid],
        )
      ).rowCount === 1,
    1500,
    'the settlement waits on the lock',
  );
  call.hangUp();
  assert.equal(await call.answered, 'hung up');
  await connectionsOpen(serving.gateway.app.server, 0);
  await blocker.query('commit');

  const rows = await afterHangUp(serving.books, token.id);
  t.diagnostic(`row: ${JSON.stringify(endingOf(rows[0] as UsageRow))}`);
  assert.deepEqual(rows.map(endingOf), [
    {
      requestId: 'hung-up-settling',
      status: 499,
      errorCode: 'CallerGone',
      channel: 'fake-dashscope',
      imagesRequested: IMAGES,
      imagesReported: IMAGES,
      imagesReceived: IMAGES,
      imagesDelivered: 0,
      imagesBilled: 0,
      costMicros: 0,
    },
  ]);
  await servesNext(serving, fake, token);
});
