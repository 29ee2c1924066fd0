import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { EngineJob } from '../../src/engine/engine.js';
import { GatewayError } from '../../src/errors/gateway-error.js';
import {
  type BillingGateway,
  eventually,
  gate,
  startBillingGateway,
} from '../helpers/billing-gateway.js';
import { BACKENDS } from '../helpers/database-backends.js';
import { parseLikeSdk, postStreaming, type StreamingExchange } from '../helpers/dashscope-sse.js';
import { GENERATION_URL, modelABody } from '../helpers/requests.js';
import { aborted } from '../helpers/aborted.js';

// docs/api.md §10.3 and §10.6, docs/admission.md: an incremental stream hands each image to the
// caller's connection once it is stored, then bills it, before the rest are produced.

const SDK_STREAM_HEADERS = {
  accept: 'text/event-stream',
  'x-accel-buffering': 'no',
  'x-dashscope-sse': 'enable',
};
const FOUR_IMAGES = modelABody({ enable_sequential: true, n: 4, incremental_output: true });

interface Stepped {
  gateway: BillingGateway;
  baseUrl: string;
  token: { id: string; authorization: string };
  /** Lets the engine produce image `index`. */
  release(index: number): void;
  /** The running job, once the engine has it. */
  job: Promise<EngineJob>;
  /** Every stream posted, hung up when the test ends. */
  exchanges: StreamingExchange[];
}

async function openStepped(
  t: TestContext,
  name: string,
  imageQuota = 4,
): Promise<Stepped | undefined> {
  const target = BACKENDS.find(([backend]) => backend === name)?.[1];
  assert.ok(target);
  const database = await target(t);
  if (database === undefined) return undefined;
  const gateway = await startBillingGateway({ database });
  const exchanges: StreamingExchange[] = [];
  // A stream a failed assertion left open would hold the gateway's close for ever.
  t.after(async () => {
    for (const exchange of exchanges) exchange.hangUp();
    await gateway.close();
  });
  const baseUrl = await gateway.app.listen({ port: 0, host: '127.0.0.1' });
  const token = await gateway.token({ limits: { imageQuota } });
  const gates = Array.from({ length: 8 }, () => gate());
  let jobSeen: (job: EngineJob) => void = () => undefined;
  const job = new Promise<EngineJob>((resolve) => {
    jobSeen = resolve;
  });
  gateway.engine.imageGate = async (index, running) => {
    jobSeen(running);
    await Promise.race([gates[index]?.promise, aborted(running.signal)]);
  };
  return { gateway, baseUrl, token, job, exchanges, release: (index) => gates[index]?.open() };
}

async function post(opened: Stepped, body: unknown): Promise<StreamingExchange> {
  const exchange = await postStreaming(
    opened.baseUrl,
    GENERATION_URL,
    { authorization: opened.token.authorization, ...SDK_STREAM_HEADERS },
    body,
  );
  opened.exchanges.push(exchange);
  return exchange;
}

async function standing(opened: Stepped) {
  const found = await opened.gateway.admission.limits.find(opened.token.id);
  assert.ok(found);
  return { used: found.imagesUsed, reserved: found.imagesReserved };
}

async function ledgerRows(opened: Stepped) {
  await opened.gateway.admission.ledger.flush();
  return opened.gateway.admission.usage.list({ tokenId: opened.token.id }, 100);
}

function imageUrl(requestId: string, index: number): string {
  return `https://images.test/${requestId}/1-${index}.png`;
}

for (const [name] of BACKENDS) {
  describe(`incremental streams on ${name}`, () => {
    it('sends each image as soon as it is stored and bills it once sent, before the next is produced; quota exact', async (t) => {
      const opened = await openStepped(t, name);
      if (opened === undefined) return;
      // The stream's headers go out with its first event: the first image must be let through.
      const pending = post(opened, FOUR_IMAGES);
      opened.release(0);
      const answer = await pending;
      const requestId = String(answer.headers['x-request-id']);
      for (let index = 0; index < 4; index++) {
        opened.release(index);
        await answer.received(imageUrl(requestId, index));
        // Handed over, then billed: the image moves from reserved to used once its event is out.
        await eventually(async () => (await standing(opened)).used === index + 1);
        assert.deepEqual(await standing(opened), { used: index + 1, reserved: 3 - index });
        assert.ok(
          !answer.text().includes(imageUrl(requestId, index + 1)),
          'the next is not out yet',
        );
      }
      const events = parseLikeSdk(await answer.whole());
      assert.deepEqual(
        events.map((event) => [event.id, event.event]),
        [1, 2, 3, 4, 5].map((id) => [String(id), 'result']),
      );
      const closing = JSON.parse(events[4]?.data ?? '{}') as { usage: { image_count: number } };
      assert.equal(closing.usage.image_count, 4);
      assert.deepEqual(await standing(opened), { used: 4, reserved: 0 }, 'billed once, never more');
      const rows = await ledgerRows(opened);
      assert.equal(rows.length, 1);
      assert.deepEqual(
        [rows[0]?.status, rows[0]?.imagesDelivered, rows[0]?.imagesBilled],
        [200, 4, 4],
      );
      assert.ok((rows[0]?.costMicros ?? -1) >= 0);
      const refused = await post(opened, FOUR_IMAGES);
      assert.equal(refused.status, 429, 'the quota is spent exactly');
      await refused.whole();
    });

    it('bills the 2 images delivered when the caller leaves after 2 of 4, and records 499', async (t) => {
      const opened = await openStepped(t, name);
      if (opened === undefined) return;
      // The stream's headers go out with its first event: the first image must be let through.
      const pending = post(opened, FOUR_IMAGES);
      opened.release(0);
      const answer = await pending;
      const requestId = String(answer.headers['x-request-id']);
      opened.release(0);
      opened.release(1);
      await answer.received(imageUrl(requestId, 1));
      const { signal } = await opened.job;
      answer.hangUp();
      await aborted(signal);
      // The stand-in row holds the 2 billed images until the request's own row replaces it.
      await eventually(async () => (await ledgerRows(opened))[0]?.status === 499);
      const [row, ...others] = await ledgerRows(opened);
      assert.deepEqual(others, []);
      assert.deepEqual(
        [row?.status, row?.errorCode, row?.imagesDelivered, row?.imagesBilled],
        [499, 'CallerGone', 2, 2],
      );
      await eventually(async () => (await standing(opened)).reserved === 0);
      assert.deepEqual(await standing(opened), { used: 2, reserved: 0 });
    });

    it('stops with an error event when the lease is lost mid-stream; the stand-in row carries the partial bill', async (t) => {
      const opened = await openStepped(t, name);
      if (opened === undefined) return;
      // The stream's headers go out with its first event: the first image must be let through.
      const pending = post(opened, FOUR_IMAGES);
      opened.release(0);
      const answer = await pending;
      const requestId = String(answer.headers['x-request-id']);
      opened.release(0);
      await answer.received(imageUrl(requestId, 0));
      await eventually(async () => (await standing(opened)).used === 1);
      // As if this node had stalled past its lease: another node reclaims the reservation.
      await opened.gateway.admission.quota.reclaimExpired(Date.now() + 3_600_000);
      const [standIn] = await ledgerRows(opened);
      assert.deepEqual(
        [standIn?.status, standIn?.errorCode, standIn?.imagesDelivered, standIn?.imagesBilled],
        [0, 'Abandoned', 1, 1],
      );
      assert.ok((standIn?.costMicros ?? -1) >= 0);
      assert.deepEqual(await standing(opened), { used: 1, reserved: 0 });
      opened.release(1);
      opened.release(2);
      opened.release(3);
      const events = parseLikeSdk(await answer.whole());
      // The second image was handed over before its bill found the lease gone: the one window.
      assert.deepEqual(
        events.map((event) => [event.id, event.event, event.isError]),
        [
          ['1', 'result', false],
          ['2', 'result', false],
          ['3', 'error', true],
        ],
      );
      assert.ok(events[1]?.data.includes(imageUrl(requestId, 1)));
      assert.ok(!events.some((event) => event.data.includes(imageUrl(requestId, 2))));
      assert.equal(JSON.parse(events[2]?.data ?? '{}').code, 'Overloaded');
      assert.deepEqual(await standing(opened), { used: 1, reserved: 0 }, 'nothing more billed');
      // The request's own row replaces the stand-in: one row, saying what the caller saw.
      await eventually(async () => opened.gateway.engine.calls === 1);
      const rows = await ledgerRows(opened);
      assert.equal(rows.length, 1);
      assert.deepEqual(
        [rows[0]?.status, rows[0]?.errorCode, rows[0]?.imagesDelivered, rows[0]?.imagesBilled],
        [503, 'Overloaded', 2, 1],
        'the row says the second image was delivered unbilled',
      );
    });

    // A partial bill whose COMMIT reached the server while its answer was lost (a connection
    // reset, a database frozen after the commit): the image is billed whatever the gateway heard.
    for (const checkFails of [false, true]) {
      it(`keeps the books when a partial bill committed but its answer was lost${checkFails ? ', and the check after it fails too' : ''}`, async (t) => {
        const opened = await openStepped(t, name);
        if (opened === undefined) return;
        const quota = opened.gateway.admission.quota;
        const billDelivered = quota.billDelivered.bind(quota);
        let bills = 0;
        quota.billDelivered = async (...args) => {
          const outcome = await billDelivered(...args);
          if (++bills === 2) throw new Error('connection lost after COMMIT was sent');
          return outcome;
        };
        if (checkFails)
          quota.billedOnStandIn = async () => {
            throw new Error('database unreachable');
          };
        const pending = post(opened, FOUR_IMAGES);
        opened.release(0);
        const answer = await pending;
        const requestId = String(answer.headers['x-request-id']);
        await answer.received(imageUrl(requestId, 0));
        for (const index of [1, 2, 3]) opened.release(index);
        const events = parseLikeSdk(await answer.whole());
        await eventually(async () => (await standing(opened)).reserved === 0);
        const rows = await ledgerRows(opened);
        assert.equal(rows.length, 1);
        const [row] = rows;
        if (!checkFails) {
          // The stand-in row says the second image was billed: it is delivered, and the stream goes on.
          assert.deepEqual(
            events.map((event) => event.event),
            ['result', 'result', 'result', 'result', 'result'],
          );
          assert.deepEqual(await standing(opened), { used: 4, reserved: 0 });
          assert.deepEqual([row?.status, row?.imagesDelivered, row?.imagesBilled], [200, 4, 4]);
          return;
        }
        // Nothing tells: the stream stops after the image handed over, and the row keeps the
        // image its stand-in counted.
        assert.deepEqual(
          events.map((event) => event.event),
          ['result', 'result', 'error'],
        );
        assert.deepEqual(await standing(opened), { used: 2, reserved: 0 });
        assert.deepEqual(
          [row?.status, row?.imagesDelivered, row?.imagesBilled],
          [500, 2, 2],
          'billed on the row = images_used = images delivered',
        );
        assert.ok((row?.costMicros ?? -1) >= 0);
      });
    }

    for (const imageQuota of [4, null]) {
      it(`keeps each billed image in a row from its bill on, before the ledger's flush, when the stream fails (${imageQuota === null ? 'no quota' : 'quota'})`, async (t) => {
        const opened = await openStepped(t, name, imageQuota ?? undefined);
        if (opened === undefined) return;
        if (imageQuota === null)
          await opened.gateway.admission.limits.update(opened.token.id, { imageQuota: null });
        const stepped = opened.gateway.engine.imageGate;
        opened.gateway.engine.imageGate = async (index, job) => {
          if (index === 2) throw new GatewayError('UpstreamError', 'the upstream broke');
          await stepped?.(index, job);
        };
        // What the database holds without the ledger's flush is what a node killed now leaves.
        const unflushed = () =>
          opened.gateway.admission.usage.list({ tokenId: opened.token.id }, 10);
        const pending = post(opened, FOUR_IMAGES);
        opened.release(0);
        const answer = await pending;
        const requestId = String(answer.headers['x-request-id']);
        await answer.received(imageUrl(requestId, 0));
        await eventually(async () => (await unflushed()).length === 1);
        const afterOne = await unflushed();
        assert.deepEqual(
          afterOne.map((row) => [row.status, row.errorCode, row.imagesBilled]),
          [[0, 'Abandoned', 1]],
          'the first image has its row as soon as it is billed',
        );
        opened.release(1);
        const events = parseLikeSdk(await answer.whole());
        assert.deepEqual(
          events.map((event) => [event.id, event.event]),
          [
            ['1', 'result'],
            ['2', 'result'],
            ['3', 'error'],
          ],
        );
        await eventually(async () => (await standing(opened)).reserved === 0);
        assert.equal((await standing(opened)).used, 2);
        const beforeFlush = await unflushed();
        assert.deepEqual(
          beforeFlush.map((row) => [row.status, row.imagesDelivered, row.imagesBilled]),
          [[0, 2, 2]],
          'both billed images are in a row while the final row waits for the flush',
        );
        assert.ok(beforeFlush[0]?.costMicros !== undefined && beforeFlush[0].costMicros >= 0);
        const [final, ...others] = await ledgerRows(opened);
        assert.deepEqual(others, []);
        assert.deepEqual(
          [final?.id, final?.status, final?.errorCode, final?.imagesDelivered, final?.imagesBilled],
          [beforeFlush[0]?.id, 502, 'UpstreamError', 2, 2],
        );
      });
    }
  });
}
