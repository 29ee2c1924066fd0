import { GatewayMetrics } from '../../src/metrics/gateway-metrics.js';
import { parseSamples, samplesOf } from '../metrics/prometheus-text.js';
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { EngineJob, EngineRun } from '../../src/engine/engine.js';
import { GatewayError } from '../../src/errors/gateway-error.js';
import type { DatabaseTarget } from '../../src/store/database/database.js';
import {
  type BillingGateway,
  eventually,
  gate,
  startBillingGateway,
} from '../helpers/billing-gateway.js';
import { BACKENDS } from '../helpers/database-backends.js';
import { parseLikeSdk, postStreaming, type SdkEvent } from '../helpers/dashscope-sse.js';
import { GENERATION_URL, modelABody, modelBBody } from '../helpers/requests.js';
import { aborted } from '../helpers/aborted.js';

// docs/api.md §10 (Streaming), read as the official DashScope SDK reads it.

/** The headers the SDK sends with `stream=True`. */
const SDK_STREAM_HEADERS = {
  accept: 'text/event-stream',
  'x-accel-buffering': 'no',
  'x-dashscope-sse': 'enable',
};
const KEEP_ALIVE = ':keep-alive';

interface Opened {
  gateway: BillingGateway;
  baseUrl: string;
  token: { id: string; authorization: string };
}

async function open(
  t: TestContext,
  options: {
    keepAliveMs?: number;
    database?: DatabaseTarget;
    imageQuota?: number;
    metrics?: GatewayMetrics;
  } = {},
): Promise<Opened> {
  const gateway = await startBillingGateway({
    eventStreamKeepAliveMs: options.keepAliveMs,
    database: options.database,
    ...(options.metrics === undefined ? {} : { metrics: options.metrics }),
  });
  t.after(() => gateway.close());
  const baseUrl = await gateway.app.listen({ port: 0, host: '127.0.0.1' });
  const token = await gateway.token({ limits: { imageQuota: options.imageQuota ?? 100 } });
  return { gateway, baseUrl, token };
}

function post(opened: Opened, body: unknown, headers: Record<string, string> = SDK_STREAM_HEADERS) {
  return postStreaming(
    opened.baseUrl,
    GENERATION_URL,
    { authorization: opened.token.authorization, ...headers },
    body,
  );
}

/** The parsed `data` of each event; every one must be a result event with status 200. */
function resultsOf(events: SdkEvent[]): Record<string, unknown>[] {
  return events.map((event, index) => {
    assert.equal(event.isError, false, `event ${index + 1} is a result`);
    assert.equal(event.event, 'result');
    assert.equal(event.id, String(index + 1));
    return JSON.parse(event.data) as Record<string, unknown>;
  });
}

async function standing(opened: Opened) {
  const found = await opened.gateway.admission.limits.find(opened.token.id);
  assert.ok(found);
  return { used: found.imagesUsed, reserved: found.imagesReserved };
}

async function ledgerRows(opened: Opened) {
  await opened.gateway.admission.ledger.flush();
  return opened.gateway.admission.usage.list({ tokenId: opened.token.id }, 100);
}

/** The next engine job's signal, once the fake engine has been handed it. */
function nextJob(t: TestContext, opened: Opened): Promise<EngineJob> {
  const engine = opened.gateway.engine;
  const generate = engine.generate.bind(engine);
  return new Promise((resolve) => {
    t.mock.method(engine, 'generate', (job: EngineJob): EngineRun => {
      resolve(job);
      return generate(job);
    });
  });
}

describe('streaming: the whole result in one event', () => {
  it('answers the SDK headers with text/event-stream in DashScope framing, byte for byte', async (t) => {
    const opened = await open(t);
    const answer = await post(opened, modelBBody({ n: 2 }));
    assert.equal(answer.status, 200);
    assert.equal(answer.headers['content-type'], 'text/event-stream; charset=utf-8');
    assert.equal(answer.headers['cache-control'], 'no-cache');
    assert.ok(answer.headers['x-request-id']);
    const text = await answer.whole();
    const [head, data] = text.split('data:');
    assert.equal(head, 'id:1\nevent:result\n:HTTP_STATUS/200\n');
    assert.ok(data?.endsWith('\n\n'), 'the event ends with a blank line');
    const [body] = resultsOf(parseLikeSdk(text));
    assert.deepEqual(body, {
      output: {
        choices: [
          {
            finish_reason: 'stop',
            message: {
              role: 'assistant',
              content: [
                { image: `https://images.test/${answer.headers['x-request-id']}/1-0.png` },
                { image: `https://images.test/${answer.headers['x-request-id']}/1-1.png` },
              ],
            },
          },
        ],
      },
      usage: { image_count: 2, width: 2048, height: 2048 },
      request_id: answer.headers['x-request-id'],
    });
    assert.deepEqual(await standing(opened), { used: 2, reserved: 0 });
  });

  for (const [how, headers, parameters] of [
    ['parameters.stream: true alone', {}, { stream: true }],
    ['Accept: text/event-stream alone', { accept: 'text/event-stream' }, {}],
    ['Accept in capitals, among others', { accept: 'application/json, TEXT/Event-Stream' }, {}],
    ['X-DashScope-SSE: enable alone', { 'x-dashscope-sse': 'enable' }, {}],
  ] as const) {
    it(`streams when asked by ${how}`, async (t) => {
      const opened = await open(t);
      const answer = await post(opened, modelABody({ ...parameters }), headers);
      assert.equal(answer.headers['content-type'], 'text/event-stream; charset=utf-8');
      const events = resultsOf(parseLikeSdk(await answer.whole()));
      assert.equal(events.length, 1);
      assert.equal((events[0]?.usage as { image_count: number }).image_count, 1);
    });
  }

  it('sends model A sequential output without incremental_output as one event with every image', async (t) => {
    const opened = await open(t);
    const answer = await post(opened, modelABody({ enable_sequential: true, n: 3 }));
    const [body, ...more] = resultsOf(parseLikeSdk(await answer.whole()));
    assert.equal(more.length, 0);
    const output = body?.output as { choices: { message: { content: unknown[] } }[] };
    assert.equal(output.choices[0]?.message.content.length, 3);
  });

  for (const accept of ['text/event-stream;q=0', 'text/event-streamx', '*/*', 'text/*']) {
    it(`answers JSON to Accept: ${accept}, which does not ask for an event stream`, async (t) => {
      const opened = await open(t);
      const answer = await post(opened, modelABody(), { accept });
      assert.equal(answer.status, 200);
      assert.match(String(answer.headers['content-type']), /^application\/json/);
    });
  }

  it('answers stream: false and result_format "message" with the usual JSON', async (t) => {
    const opened = await open(t);
    const answer = await post(opened, modelABody({ stream: false, result_format: 'message' }), {});
    assert.equal(answer.status, 200);
    assert.match(String(answer.headers['content-type']), /^application\/json/);
    const body = JSON.parse(await answer.whole()) as { usage: { image_count: number } };
    assert.equal(body.usage.image_count, 1);
  });
});

describe('streaming: model A sequential output with incremental_output', () => {
  it('sends each image in its own event, then a closing event with stop and the usage', async (t) => {
    const opened = await open(t);
    const answer = await post(
      opened,
      modelABody({ enable_sequential: true, n: 3, stream: true, incremental_output: true }),
    );
    const requestId = answer.headers['x-request-id'];
    const events = resultsOf(parseLikeSdk(await answer.whole()));
    assert.equal(events.length, 4);
    events.slice(0, 3).forEach((event, index) => {
      assert.deepEqual(event, {
        output: {
          choices: [
            {
              finish_reason: null,
              message: {
                role: 'assistant',
                content: [
                  { type: 'image', image: `https://images.test/${requestId}/1-${index}.png` },
                ],
              },
            },
          ],
          finished: false,
        },
        request_id: requestId,
      });
    });
    const closing = events[3] as {
      output: { choices: unknown[]; finished: boolean };
      usage: { image_count: number; size: string };
      request_id: string;
    };
    assert.deepEqual(closing.output, {
      choices: [{ finish_reason: 'stop', message: { role: 'assistant', content: [] } }],
      finished: true,
    });
    assert.equal(closing.usage.image_count, 3);
    assert.equal(closing.request_id, requestId);
    assert.deepEqual(await standing(opened), { used: 3, reserved: 0 });
    const [row] = await ledgerRows(opened);
    assert.equal(row?.status, 200);
    assert.equal(row?.imagesDelivered, 3);
    assert.equal(row?.imagesBilled, 3);
  });

  it('keeps one event for model B and for model A outside sequential mode', async (t) => {
    const opened = await open(t);
    for (const body of [
      modelBBody({ n: 2, incremental_output: true }),
      modelABody({ n: 2, incremental_output: true }),
    ]) {
      const answer = await post(opened, body);
      assert.equal(resultsOf(parseLikeSdk(await answer.whole())).length, 1, body.model);
    }
  });
});

describe('streaming: errors', () => {
  it('answers problems found before the stream starts as the usual JSON error with its status', async (t) => {
    const opened = await open(t, { imageQuota: 1 });
    const badFormat = await post(opened, modelABody({ result_format: 'text' }));
    assert.equal(badFormat.status, 400);
    assert.match(String(badFormat.headers['content-type']), /^application\/json/);
    const refused = JSON.parse(await badFormat.whole()) as { code: string; message: string };
    assert.equal(refused.code, 'InvalidParameter');
    assert.match(refused.message, /^parameters\.result_format: must be "message"$/);

    const overQuota = await post(opened, modelABody({ n: 2 }));
    assert.equal(overQuota.status, 429);
    assert.equal(
      (JSON.parse(await overQuota.whole()) as { code: string }).code,
      'Throttling.AllocationQuota',
    );

    const anonymous = await postStreaming(
      opened.baseUrl,
      GENERATION_URL,
      SDK_STREAM_HEADERS,
      modelABody(),
    );
    assert.equal(anonymous.status, 401);
    assert.match(String(anonymous.headers['content-type']), /^application\/json/);
    await anonymous.whole();

    opened.gateway.engine.failure = new GatewayError('UpstreamError', 'the upstream failed');
    const failedEarly = await post(opened, modelABody());
    assert.equal(failedEarly.status, 502, 'failed before any keep-alive: still plain JSON');
    assert.equal((JSON.parse(await failedEarly.whole()) as { code: string }).code, 'UpstreamError');
    assert.deepEqual(await standing(opened), { used: 0, reserved: 0 });
  });

  it('ends a started stream with an error event carrying the status, and records the real outcome', async (t) => {
    const metrics = new GatewayMetrics();
    const opened = await open(t, { keepAliveMs: 20, metrics });
    const engine = opened.gateway.engine;
    const held = gate();
    engine.gate = held.promise;
    engine.failure = new GatewayError('UpstreamError', 'the upstream failed');
    const answer = await post(opened, modelABody({ stream: true }));
    assert.equal(answer.status, 200);
    await answer.received(KEEP_ALIVE);
    held.open();
    const text = await answer.whole();
    const requestId = answer.headers['x-request-id'];
    assert.ok(
      text.endsWith(
        `id:1\nevent:error\n:HTTP_STATUS/502\nstatus:502\ndata:${JSON.stringify({ code: 'UpstreamError', message: 'the upstream failed', request_id: requestId })}\n\n`,
      ),
    );
    const events = parseLikeSdk(text);
    assert.equal(events.length, 1, 'keep-alive comments are not events');
    assert.deepEqual(
      { isError: events[0]?.isError, status: events[0]?.status },
      { isError: true, status: 502 },
    );
    assert.deepEqual(await standing(opened), { used: 0, reserved: 0 });
    const rows = await ledgerRows(opened);
    assert.equal(rows.length, 1);
    assert.deepEqual(
      { status: rows[0]?.status, code: rows[0]?.errorCode, billed: rows[0]?.imagesBilled },
      { status: 502, code: 'UpstreamError', billed: 0 },
    );
    // The metrics count it as the ledger does: a 502, though the stream's head said 200.
    const counted = samplesOf(parseSamples(await metrics.scrape()), 'imagegate_requests_total');
    assert.deepEqual(
      counted.map((sample) => [sample.labels.status, sample.labels.code]),
      [['502', 'UpstreamError']],
    );
  });
});

describe('streaming: keep-alive and callers who leave', () => {
  it('sends comment lines while the generation runs, which the SDK skips, then the events', async (t) => {
    const opened = await open(t, { keepAliveMs: 20 });
    const held = gate();
    opened.gateway.engine.gate = held.promise;
    const answer = await post(
      opened,
      modelABody({ enable_sequential: true, n: 2, incremental_output: true }),
    );
    await answer.received(`${KEEP_ALIVE}\n\n${KEEP_ALIVE}\n\n`);
    assert.ok(!answer.text().includes('data:'), 'nothing but comments before the result');
    held.open();
    const text = await answer.whole();
    assert.ok(text.startsWith(`${KEEP_ALIVE}\n\n`));
    assert.equal(resultsOf(parseLikeSdk(text)).length, 3);
  });

  it('bills nothing and records 499 when the caller leaves mid-stream, before any image was sent', async (t) => {
    const opened = await open(t, { keepAliveMs: 20 });
    const held = gate();
    opened.gateway.engine.gate = held.promise;
    const job = nextJob(t, opened);
    const answer = await post(
      opened,
      modelABody({ enable_sequential: true, n: 3, incremental_output: true }),
    );
    await answer.received(KEEP_ALIVE);
    const { signal } = await job;
    answer.hangUp();
    await aborted(signal);
    held.open();
    await eventually(async () => (await ledgerRows(opened)).length === 1);
    const rows = await ledgerRows(opened);
    assert.equal(rows.length, 1);
    assert.deepEqual(
      {
        status: rows[0]?.status,
        code: rows[0]?.errorCode,
        delivered: rows[0]?.imagesDelivered,
        billed: rows[0]?.imagesBilled,
      },
      { status: 499, code: 'CallerGone', delivered: 0, billed: 0 },
    );
    assert.deepEqual(await standing(opened), { used: 0, reserved: 0 });
  });
});

describe('streaming: billing on each database', () => {
  for (const [name, targetFor] of BACKENDS) {
    it(`${name}: an incremental stream bills its images once, as a synchronous request does`, async (t) => {
      const database = await targetFor(t);
      if (database === undefined) return;
      const opened = await open(t, { database, imageQuota: 5 });
      const body = modelABody({ enable_sequential: true, n: 4, incremental_output: true });
      const answer = await post(opened, body);
      assert.equal(resultsOf(parseLikeSdk(await answer.whole())).length, 5);
      assert.deepEqual(await standing(opened), { used: 4, reserved: 0 });
      const refused = await post(opened, body);
      assert.equal(refused.status, 429, 'the quota counts the streamed images');
      await refused.whole();
      const rows = await ledgerRows(opened);
      const billed = rows.filter((row) => row.status === 200);
      assert.equal(billed.length, 1);
      assert.equal(billed[0]?.imagesBilled, 4);
    });
  }
});
