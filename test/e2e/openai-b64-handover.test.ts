import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { PassThrough } from 'node:stream';
import { describe, it, type TestContext } from 'node:test';
import { MODEL_B } from '../../src/domain/models.js';
import type { UsageRow } from '../../src/domain/usage-row.js';
import { LEDGER_CODES } from '../../src/errors/error-table.js';

const CALLER_GONE_STATUS = LEDGER_CODES.CallerGone.status;
import { eventually } from '../helpers/waits.js';
import { gate } from '../helpers/billing-gateway.js';
import { parseSamples, samplesOf } from '../metrics/prometheus-text.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';
import { testImage } from './e2e-helpers.js';

const WAIT_MS = 30_000;
const CALLERS = 8;
const BOUNDARY = 'handover-test';

async function openGateway(t: TestContext) {
  const gateway = await startTestGateway();
  t.after(() => gateway.close());
  const port = Number(new URL(await gateway.listen()).port);
  const { token, record } = await gateway.services.tokenIssuer.issue({
    name: 'handover',
    account: 'acme',
    admin: false,
    expiresInSeconds: undefined,
  });
  await gateway.admission.limits.update(record.id, { imageQuota: 100 });
  return { gateway, port, token, tokenId: record.id };
}

/** Every image read back for an answer gives its first 200 KB and then no more: a body that never ends. */
function stallImages(gateway: TestGateway): void {
  const blobs = gateway.storage.blobs;
  const get = blobs.get.bind(blobs);
  blobs.get = async (key) => {
    const blob = await get(key);
    if (blob === undefined) return undefined;
    blob.stream.destroy();
    const stalled = new PassThrough();
    stalled.write(Buffer.alloc(200_000, 7));
    return { size: blob.size, stream: stalled };
  };
}

/**
 * Sends one request on a socket of its own, reads until the first image's base64 has begun,
 * then destroys the socket. Resolves with whether the body it read was whole (it never is).
 */
function leaveMidBody(port: number, head: string, body: Buffer): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    socket.on('error', () => undefined);
    socket.on('connect', () => {
      socket.write(head);
      socket.write(body);
    });
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      if (!text.includes('"b64_json":"')) return;
      if (!text.startsWith('HTTP/1.1 200')) reject(new Error(text.slice(0, 300)));
      socket.destroy();
      resolve(text.endsWith('}'));
    });
    socket.on('close', () => reject(new Error(`closed before the body: ${text.slice(0, 300)}`)));
  });
}

function postHead(path: string, token: string, type: string, length: number): string {
  return [
    `POST ${path} HTTP/1.1`,
    'Host: 127.0.0.1',
    `Authorization: Bearer ${token}`,
    `Content-Type: ${type}`,
    `Content-Length: ${length}`,
    '',
    '',
  ].join('\r\n');
}

function generationExchange(token: string): [string, Buffer] {
  const body = Buffer.from(
    JSON.stringify({
      model: MODEL_B,
      prompt: 'a lighthouse at dusk',
      n: 2,
      size: '1024x1024',
      response_format: 'b64_json',
    }),
  );
  return [postHead('/v1/images/generations', token, 'application/json', body.length), body];
}

/** An edit without response_format: answered in base64. */
async function editExchange(token: string): Promise<[string, Buffer]> {
  const image = await testImage(320, 320, 0, 'png');
  const field = (name: string, value: string) =>
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  const body = Buffer.concat([
    Buffer.from(
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="image"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n`,
    ),
    image,
    Buffer.from('\r\n'),
    Buffer.from(
      field('model', MODEL_B) +
        field('prompt', 'make it winter') +
        field('n', '2') +
        field('size', '1024x1024'),
    ),
    Buffer.from(`--${BOUNDARY}--\r\n`),
  ]);
  const type = `multipart/form-data; boundary=${BOUNDARY}`;
  return [postHead('/v1/images/edits', token, type, body.length), body];
}

async function rowsOf(gateway: TestGateway, tokenId: string, count: number): Promise<UsageRow[]> {
  const rows = async () => {
    await gateway.admission.ledger.flush();
    return gateway.admission.usage.list({ tokenId }, 100);
  };
  await eventually(async () => (await rows()).length >= count, WAIT_MS, `${count} ledger rows`);
  return rows();
}

/** What the request log reported for `route`: [status, code] of each request, with images. */
async function loggedOf(gateway: TestGateway, route: string) {
  const samples = parseSamples(await gateway.metrics.scrape());
  const requests = samplesOf(samples, 'imagegate_requests_total', { route })
    .flatMap(({ labels, value }) => Array<string>(value).fill(`${labels.status} ${labels.code}`))
    .sort();
  const count = (name: string) =>
    samplesOf(samples, name).reduce((total, sample) => total + sample.value, 0);
  return {
    requests,
    delivered: count('imagegate_images_delivered_total'),
    billed: count('imagegate_images_billed_total'),
  };
}

async function leaveMidBodyTogether(
  t: TestContext,
  exchange: (token: string) => Promise<[string, Buffer]>,
  route: string,
) {
  const { gateway, port, token, tokenId } = await openGateway(t);
  stallImages(gateway);
  const [head, body] = await exchange(token);
  const whole = await Promise.all(
    Array.from({ length: CALLERS }, () => leaveMidBody(port, head, body)),
  );
  assert.deepEqual(whole, Array<boolean>(CALLERS).fill(false), 'no caller received a whole body');
  const rows = await rowsOf(gateway, tokenId, CALLERS);
  await eventually(
    async () => (await loggedOf(gateway, route)).requests.length === CALLERS,
    WAIT_MS,
    'every request logged',
  );
  const billed = rows.reduce((total, row) => total + row.imagesBilled, 0);
  const delivered = rows.reduce((total, row) => total + row.imagesDelivered, 0);
  assert.deepEqual(
    {
      rows: rows.map(
        (row) => `${row.status} ${row.errorCode} ${row.imagesDelivered} ${row.imagesBilled}`,
      ),
      billed,
      delivered,
      logged: await loggedOf(gateway, route),
    },
    {
      rows: Array<string>(CALLERS).fill(`${CALLER_GONE_STATUS} CallerGone 0 0`),
      billed: 0,
      delivered: 0,
      logged: {
        requests: Array<string>(CALLERS).fill(`${CALLER_GONE_STATUS} CallerGone`),
        delivered: 0,
        billed: 0,
      },
    },
  );
  await eventually(
    async () => {
      const standing = await gateway.admission.limits.find(tokenId);
      return standing?.imagesUsed === 0 && standing.imagesReserved === 0;
    },
    WAIT_MS,
    'the reservations released and nothing used',
  );
}

describe('a base64 answer is billed once its whole body is handed to the connection', () => {
  it('bills nothing to generation callers who leave in the middle of the body, and the log agrees', async (t) => {
    await leaveMidBodyTogether(
      t,
      async (token) => generationExchange(token),
      '/v1/images/generations',
    );
  });

  it('bills nothing to edit callers who leave in the middle of the body, and the log agrees', async (t) => {
    await leaveMidBodyTogether(t, editExchange, '/v1/images/edits');
  });
});

describe('a base64 answer read whole', () => {
  it('is billed once handed over, logged as its row says, and replayed under its Idempotency-Key', async (t) => {
    const { gateway, port, token, tokenId } = await openGateway(t);
    const post = () =>
      fetch(`http://127.0.0.1:${port}/v1/images/generations`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          'idempotency-key': 'b64-whole',
        },
        body: generationExchange(token)[1],
      });
    const first = await post();
    assert.equal(first.status, 200);
    const firstBody = (await first.json()) as { data: { b64_json: string }[] };
    assert.equal(firstBody.data.length, 2);
    const again = await post();
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(await again.json(), firstBody);
    const rows = await rowsOf(gateway, tokenId, 2);
    assert.deepEqual(
      rows
        .map((row) => `${row.status} ${row.replayed} ${row.imagesDelivered} ${row.imagesBilled}`)
        .sort(),
      ['200 false 2 2', '200 true 2 0'],
    );
    const route = '/v1/images/generations';
    await eventually(
      async () => (await loggedOf(gateway, route)).requests.length === 2,
      WAIT_MS,
      'both requests logged',
    );
    assert.deepEqual(await loggedOf(gateway, route), {
      requests: ['200 ', '200 '],
      delivered: 4,
      billed: 2,
    });
    assert.equal((await gateway.admission.limits.find(tokenId))?.imagesUsed, 2);
  });
});

describe('a URL answer, billed before it is sent', () => {
  it('whose caller leaves after the bill keeps its billed row, and the log says the same', async (t) => {
    const { gateway, port, token, tokenId } = await openGateway(t);
    const serverSockets: Socket[] = [];
    gateway.app.server.on('connection', (socket: Socket) => serverSockets.push(socket));
    const billed = gate();
    const answer = gate();
    const quota = gateway.admission.quota;
    const settle = quota.settle.bind(quota);
    quota.settle = async (...args) => {
      const outcome = await settle(...args);
      billed.open();
      await answer.promise;
      return outcome;
    };
    const body = Buffer.from(
      JSON.stringify({ model: MODEL_B, prompt: 'a lighthouse', n: 1, size: '1024x1024' }),
    );
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    socket.write(postHead('/v1/images/generations', token, 'application/json', body.length));
    socket.write(body);
    await billed.promise;
    socket.destroy();
    await eventually(
      () => serverSockets.length === 1 && serverSockets[0]?.destroyed === true,
      WAIT_MS,
      "the gateway's side of the connection closed",
    );
    answer.open();
    const [row] = await rowsOf(gateway, tokenId, 1);
    const route = '/v1/images/generations';
    await eventually(
      async () => (await loggedOf(gateway, route)).requests.length === 1,
      WAIT_MS,
      'the request logged',
    );
    assert.deepEqual(
      {
        row: `${row?.status} ${row?.errorCode} ${row?.imagesDelivered} ${row?.imagesBilled}`,
        logged: await loggedOf(gateway, route),
      },
      { row: '200 undefined 1 1', logged: { requests: ['200 '], delivered: 1, billed: 1 } },
    );
  });
});

describe('a base64 answer handed over whose bill then fails', () => {
  async function handedOverThen(
    t: TestContext,
    beforeBill: (gateway: TestGateway) => Promise<void>,
  ) {
    const { gateway, port, token, tokenId } = await openGateway(t);
    const quota = gateway.admission.quota;
    const settle = quota.settle.bind(quota);
    quota.settle = async (...args) => {
      await beforeBill(gateway);
      return settle(...args);
    };
    const answer = await fetch(`http://127.0.0.1:${port}/v1/images/generations`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: generationExchange(token)[1],
    });
    assert.equal(answer.status, 200);
    const { data } = (await answer.json()) as { data: { b64_json: string }[] };
    assert.equal(data.length, 2, 'the caller has both images');
    const [row] = await rowsOf(gateway, tokenId, 1);
    const route = '/v1/images/generations';
    await eventually(
      async () => (await loggedOf(gateway, route)).requests.length === 1,
      WAIT_MS,
      'the request logged',
    );
    assert.deepEqual(
      {
        row: `${row?.status} ${row?.errorCode} ${row?.imagesDelivered} ${row?.imagesBilled} ${row?.costMicros}`,
        logged: await loggedOf(gateway, route),
      },
      {
        row: `200 DeliveredUnbilled 2 0 0`,
        logged: { requests: [`200 DeliveredUnbilled`], delivered: 2, billed: 0 },
      },
    );
    await eventually(
      async () => {
        const standing = await gateway.admission.limits.find(tokenId);
        return standing?.imagesUsed === 0 && standing.imagesReserved === 0;
      },
      WAIT_MS,
      'nothing used, nothing left reserved',
    );
  }

  it('on a database that fails the commit: delivered unbilled, and the row says so', async (t) => {
    await handedOverThen(t, async () => {
      throw Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ECONNRESET' });
    });
  });

  it('on a reservation that lapsed and was reclaimed: delivered unbilled, and the row says so', async (t) => {
    await handedOverThen(t, async (gateway) => {
      await gateway.admission.quota.reclaimExpired(Date.now() + 3_600_000);
    });
  });
});
