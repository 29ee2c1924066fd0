import assert from 'node:assert/strict';
import { once } from 'node:events';
import { type AddressInfo, connect } from 'node:net';
import { describe, it, type TestContext } from 'node:test';
import { GatewayMetrics } from '../../src/metrics/gateway-metrics.js';
import { type BillingGateway, gate, startBillingGateway } from '../helpers/billing-gateway.js';
import { engineStarted } from '../helpers/engine-started.js';
import { generationHead, pipelinedExchange, rawExchange } from '../helpers/raw-http.js';
import { GENERATION_URL, modelABody } from '../helpers/requests.js';
import { connectionsOpen } from '../helpers/server-connections.js';
import { eventually } from '../helpers/waits.js';

async function listening(t: TestContext, env: Record<string, string> = {}) {
  const metrics = new GatewayMetrics();
  const gateway = await startBillingGateway({ env, metrics });
  t.after(() => gateway.close());
  await gateway.app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = gateway.app.server.address() as AddressInfo;
  return { gateway, port, metrics };
}

/** Resolves once the in-flight budget holds at least `bytes` of declared request bodies. */
async function bodyBytesHeld(metrics: GatewayMetrics, bytes: number): Promise<void> {
  await eventually(
    async () =>
      Number(/^imagegate_in_flight_body_bytes (\S+)$/m.exec(await metrics.scrape())?.[1]) >= bytes,
    10_000,
    `${bytes} body bytes held in the in-flight budget`,
  );
}

const BODY = JSON.stringify(modelABody());

/** Starts a request that the fake engine holds until `release` is called. */
async function heldRequest(t: TestContext, gateway: BillingGateway, port: number, auth: string) {
  const held = gate();
  gateway.engine.gate = held.promise;
  const started = engineStarted(t, gateway.engine);
  const answer = rawExchange(port, generationHead(GENERATION_URL, auth, Buffer.byteLength(BODY)), {
    body: BODY,
  });
  await started;
  return { answer, release: () => held.open() };
}

describe('a bad day at the front door', () => {
  it('refuses past the in-flight request cap with 503 Overloaded before the body, but keeps /healthz', async (t) => {
    const { gateway, port } = await listening(t, { IMAGEGATE_MAX_INFLIGHT_REQUESTS: '1' });
    const { authorization } = await gateway.token();
    const first = await heldRequest(t, gateway, port, authorization);
    const refused = await rawExchange(
      port,
      generationHead(GENERATION_URL, authorization, 10_000_000),
    );
    assert.equal(refused.status, 503);
    assert.equal(JSON.parse(refused.body).code, 'Overloaded');
    assert.equal(refused.headers['retry-after'], '1');
    // Closed after the answer by lingering, not by a Connection: close that Node would act on
    // before the caller could read the answer.
    assert.equal(refused.headers.connection, undefined);
    assert.equal(refused.closedByServer, true, 'the unsent 10 MB body is not waited for');
    const health = await rawExchange(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    assert.equal(health.status, 200);
    first.release();
    assert.equal((await first.answer).status, 200);
    assert.equal(gateway.engine.calls, 1);
  });

  it('refuses a declared body that would pass the in-flight byte budget, before reading it', async (t) => {
    const { gateway, port, metrics } = await listening(t, {
      IMAGEGATE_MAX_BODY_BYTES: '1048576',
      IMAGEGATE_MAX_INFLIGHT_BODY_BYTES: '1500000',
    });
    const { authorization } = await gateway.token();
    // 1 MB declared and only partly sent: it holds its place in the budget.
    const slow = rawExchange(port, generationHead(GENERATION_URL, authorization, 1_000_000), {
      body: '{"model":',
      giveUpAfterMs: 1500,
    });
    await bodyBytesHeld(metrics, 1_000_000);
    const refused = await rawExchange(port, generationHead(GENERATION_URL, authorization, 600_000));
    assert.equal(refused.status, 503);
    assert.match(JSON.parse(refused.body).message, /bytes of request bodies in flight/);
    assert.equal(refused.closedByServer, true);
    // A small request still fits.
    const small = await rawExchange(
      port,
      generationHead(GENERATION_URL, authorization, Buffer.byteLength(BODY)),
      { body: BODY },
    );
    assert.equal(small.status, 200);
    assert.equal((await slow).status, 0, 'the slow upload was still in progress');
  });

  it('counts a chunked body as it streams and cuts it off past the budget', async (t) => {
    const { gateway, port, metrics } = await listening(t, {
      IMAGEGATE_MAX_BODY_BYTES: '4194304',
      IMAGEGATE_MAX_INFLIGHT_BODY_BYTES: '4194304',
    });
    const { authorization } = await gateway.token();
    // Another request's 3 MB declared body leaves 1 MB of budget for the chunked one.
    const holder = rawExchange(port, generationHead(GENERATION_URL, authorization, 3_000_000), {
      body: '{',
      giveUpAfterMs: 1500,
    });
    await bodyBytesHeld(metrics, 3_000_000);
    const chunk = Buffer.alloc(512 * 1024, 0x20);
    const frame = Buffer.concat([
      Buffer.from(`${chunk.length.toString(16)}\r\n`),
      chunk,
      Buffer.from('\r\n'),
    ]);
    const chunked = await rawExchange(
      port,
      generationHead(GENERATION_URL, authorization, 'chunked'),
      { body: Buffer.concat([frame, frame, frame, frame]) },
    );
    assert.equal(chunked.status, 503);
    assert.equal(JSON.parse(chunked.body).code, 'Overloaded');
    assert.equal((await holder).status, 0);
  });

  it('decides a token rate limit before the body: a refused caller never uploads', async (t) => {
    const { gateway, port } = await listening(t);
    const { authorization } = await gateway.token({ limits: { requestsPerMinute: 1 } });
    const first = await rawExchange(
      port,
      generationHead(GENERATION_URL, authorization, Buffer.byteLength(BODY)),
      { body: BODY },
    );
    assert.equal(first.status, 200);
    const refused = await rawExchange(
      port,
      generationHead(GENERATION_URL, authorization, 50_000_000),
    );
    assert.equal(refused.status, 429);
    assert.equal(JSON.parse(refused.body).code, 'Throttling.RateQuota');
    assert.equal(refused.closedByServer, true);
    assert.ok(refused.ms < 2000, `answered in ${refused.ms} ms without the 50 MB body`);
  });

  it('closes the connection of an unauthenticated caller who is still sending', async (t) => {
    const { port } = await listening(t);
    const refused = await rawExchange(
      port,
      generationHead(GENERATION_URL, 'Bearer not-a-token', 5_000_000),
      { body: '{"model"' },
    );
    assert.equal(refused.status, 401);
    assert.equal(refused.headers.connection, undefined);
    assert.equal(refused.closedByServer, true);
  });

  it('keeps the connection of a refused request that has no body to wait for', async (t) => {
    const { port } = await listening(t);
    const exchanges = [
      'GET /no/such/route HTTP/1.1\r\nHost: x\r\n\r\n',
      `GET ${GENERATION_URL} HTTP/1.1\r\nHost: x\r\n\r\n`,
      `POST ${GENERATION_URL} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer not-a-token\r\nContent-Type: application/json\r\nContent-Length: 0\r\n\r\n`,
    ];
    const answers = await Promise.all(
      exchanges.map((head) => rawExchange(port, head, { waitForCloseMs: 300 })),
    );
    assert.deepEqual(
      answers.map(({ status, headers, closedByServer }) => [
        status,
        headers.connection,
        closedByServer,
      ]),
      [
        [404, 'keep-alive', false],
        [405, 'keep-alive', false],
        [401, 'keep-alive', false],
      ],
    );
  });

  it('reads and drops the small body of a refused request, and serves the next one on its connection', async (t) => {
    const { port } = await listening(t);
    const refused = `${generationHead(GENERATION_URL, 'Bearer not-a-token', Buffer.byteLength(BODY))}${BODY}`;
    const answers = await pipelinedExchange(port, [
      refused,
      'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n',
    ]);
    assert.deepEqual(answers, [
      [401, 'keep-alive'],
      [200, 'keep-alive'],
    ]);
  });

  it('closes the connection of a refused request whose small body does not come', async (t) => {
    const { port } = await listening(t);
    const started = Date.now();
    const refused = await rawExchange(
      port,
      generationHead(GENERATION_URL, 'Bearer not-a-token', 1000),
      {
        waitForCloseMs: 10_000,
      },
    );
    assert.equal(refused.status, 401);
    assert.equal(refused.closedByServer, true);
    const ms = Date.now() - started;
    assert.ok(ms < 3000, `closed after ${ms} ms, not at the request time-out`);
  });

  it('answers a request that arrives too slowly with 408 RequestTimeout and closes it', async (t) => {
    const { gateway, port } = await listening(t, { IMAGEGATE_REQUEST_TIMEOUT_MS: '1000' });
    const { authorization } = await gateway.token();
    const trickle = await rawExchange(port, generationHead(GENERATION_URL, authorization, 1000), {
      body: '{',
      waitForCloseMs: 5000,
    });
    assert.equal(trickle.status, 408);
    assert.equal(JSON.parse(trickle.body).code, 'RequestTimeout');
    assert.equal(trickle.closedByServer, true);
    assert.ok(trickle.ms < 4000, `closed after ${trickle.ms} ms`);
  });

  it('answers what the HTTP parser refuses with the JSON error body', async (t) => {
    const { port } = await listening(t);
    const huge = await rawExchange(
      port,
      `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    assert.equal(huge.status, 431);
    assert.equal(JSON.parse(huge.body).code, 'RequestHeaderFieldsTooLarge');
    assert.equal(huge.headers['x-request-id'], JSON.parse(huge.body).request_id);
    const malformed = await rawExchange(port, 'GARBAGE / NOT-HTTP\r\n\r\n');
    assert.equal(malformed.status, 400);
    assert.equal(JSON.parse(malformed.body).code, 'InvalidParameter');
  });

  it('refuses compressed bodies with 415, whether or not they really are compressed', async (t) => {
    const { gateway, port } = await listening(t);
    const { authorization } = await gateway.token();
    for (const encoding of ['gzip', 'br', 'deflate']) {
      const answer = await rawExchange(
        port,
        generationHead(GENERATION_URL, authorization, Buffer.byteLength(BODY), {
          'Content-Encoding': encoding,
        }),
        { body: BODY },
      );
      assert.equal(answer.status, 415, encoding);
      assert.equal(JSON.parse(answer.body).code, 'UnsupportedMediaType');
    }
    const identity = await rawExchange(
      port,
      generationHead(GENERATION_URL, authorization, Buffer.byteLength(BODY), {
        'Content-Encoding': 'identity',
      }),
      { body: BODY },
    );
    assert.equal(identity.status, 200);
    assert.equal(gateway.engine.calls, 1);
  });

  it('refuses connections past IMAGEGATE_MAX_CONNECTIONS', async (t) => {
    const { gateway, port } = await listening(t, { IMAGEGATE_MAX_CONNECTIONS: '2' });
    const held = [connect(port, '127.0.0.1'), connect(port, '127.0.0.1')];
    await Promise.all(held.map((socket) => once(socket, 'connect')));
    // The server has accepted both before the third arrives.
    await connectionsOpen(gateway.app.server, 2);
    await assert.rejects(
      rawExchange(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'),
      /no answer/,
      'a third connection is closed without an answer',
    );
    held[0]?.destroy();
    await connectionsOpen(gateway.app.server, 1);
    const health = await rawExchange(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    assert.equal(health.status, 200, 'a place freed is taken again');
    held[1]?.destroy();
  });
});
