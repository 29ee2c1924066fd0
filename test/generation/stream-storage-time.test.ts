import assert from 'node:assert/strict';
import { it } from 'node:test';
import { parseLikeSdk, postStreaming } from '../helpers/dashscope-sse.js';
import { GENERATION_URL, modelABody } from '../helpers/requests.js';
import { startTestGateway } from '../helpers/test-gateway.js';

// docs/admission.md (the ledger's time columns): a stream's headers leave before its images are
// stored, so its row is where its storage time is told; the console's time split reads it there.

const STREAM_HEADERS = { accept: 'text/event-stream', 'x-dashscope-sse': 'enable' };

for (const incremental of [true, false]) {
  it(`records the storage time of a stream's images on its ledger row (incremental_output ${incremental})`, async (t) => {
    const gateway = await startTestGateway();
    t.after(() => gateway.close());
    const baseUrl = await gateway.app.listen({ port: 0, host: '127.0.0.1' });
    const authorization = await gateway.bearer();
    const exchange = await postStreaming(
      baseUrl,
      GENERATION_URL,
      { ...STREAM_HEADERS, authorization },
      modelABody({ n: 2, enable_sequential: true, incremental_output: incremental }),
    );
    assert.equal(exchange.status, 200);
    const events = parseLikeSdk(await exchange.whole());
    assert.ok(events.length > 0, 'the stream carried events');
    const requestId = (JSON.parse(events[0]?.data ?? '{}') as { request_id: string }).request_id;

    await gateway.admission.ledger.flush();
    const [row] = await gateway.admission.usage.list({ requestId }, 10);
    assert.ok(row !== undefined, `a row for ${requestId}`);
    // A sequential group's n is its most: the renderer may make fewer.
    assert.ok(
      row.imagesBilled >= 1 && row.imagesBilled === row.imagesDelivered,
      JSON.stringify(row),
    );
    // Whole milliseconds: two small saves on a fast disk may round to 0, never to nothing.
    assert.equal(typeof row.storageMs, 'number', JSON.stringify(row));
  });
}

it('records on a synchronous request’s ledger row the queue and storage times its Server-Timing header gave', async (t) => {
  const gateway = await startTestGateway();
  t.after(() => gateway.close());
  const authorization = await gateway.bearer();
  const answer = await gateway.app.inject({
    method: 'POST',
    url: GENERATION_URL,
    headers: { authorization },
    payload: modelABody({ n: 1 }),
  });
  assert.equal(answer.statusCode, 200, answer.body);
  const timing = String(answer.headers['server-timing']);
  const part = (name: string) => Number(new RegExp(`${name};dur=([\\d.]+)`).exec(timing)?.[1]);
  await gateway.admission.ledger.flush();
  const [row] = await gateway.admission.usage.list({ requestId: answer.json().request_id }, 10);
  assert.ok(row !== undefined);
  for (const [name, recorded] of [
    ['queue', row.queueMs],
    ['storage', row.storageMs],
  ] as const) {
    assert.ok(Number.isFinite(part(name)), `${name} in ${timing}`);
    assert.ok(
      Math.abs((recorded ?? Number.NaN) - part(name)) <= 1,
      `${name}: ${timing}, row ${recorded}`,
    );
  }
});
