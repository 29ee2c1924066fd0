import assert from 'node:assert/strict';
import { Agent } from 'node:http';
import { describe, it } from 'node:test';
import { eventually, gate, startBillingGateway } from '../helpers/billing-gateway.js';
import { postStreaming } from '../helpers/dashscope-sse.js';
import { GENERATION_URL, modelABody } from '../helpers/requests.js';

describe('a drain and the connections busy when it starts', () => {
  it('an event stream already under way runs to its end, then its connection is closed; an answer not yet begun says Connection: close; the close ends with them', async (t) => {
    const gateway = await startBillingGateway({ eventStreamKeepAliveMs: 50 });
    t.after(() => gateway.close());
    const baseUrl = await gateway.app.listen({ port: 0, host: '127.0.0.1' });
    const token = await gateway.token({ limits: { imageQuota: 10 } });
    const agent = new Agent({ keepAlive: true });
    t.after(() => agent.destroy());
    const engineDone = gate();
    gateway.engine.gate = engineDone.promise;

    const post = (headers: Record<string, string>) =>
      postStreaming(
        baseUrl,
        GENERATION_URL,
        { authorization: token.authorization, ...headers },
        modelABody(),
        agent,
      );
    const streaming = await post({ 'x-dashscope-sse': 'enable' });
    assert.equal(streaming.status, 200);
    assert.equal(streaming.headers.connection, 'keep-alive', 'begun before the drain');
    await streaming.received(':keep-alive');
    const plain = post({});
    await eventually(() => gateway.engine.calls === 2);

    let closed = false;
    const closing = gateway.app.close().then(() => {
      closed = true;
    });
    await eventually(() => closed || gateway.app.server.listening === false);
    assert.equal(closed, false, 'the drain waits for the requests in flight');
    engineDone.open();

    assert.match(await streaming.whole(), /"finish_reason":"stop"/, 'the stream ran to its end');
    // The agent unrefs a kept-alive socket between requests: a timer keeps this test's loop alive.
    await eventually(() => streaming.socket.destroyed, 3000);
    const answered = await plain;
    assert.equal(answered.status, 200);
    assert.equal(answered.headers.connection, 'close');
    await answered.whole();
    await eventually(() => closed, 3000);
    await closing;
  });
});
