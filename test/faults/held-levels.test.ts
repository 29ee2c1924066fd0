import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { GENERATION_URL, modelABody } from '../helpers/requests.js';
import { signedUploadForm } from '../helpers/sdk-uploads.js';
import {
  startTokenedGatewayProcess,
  type TokenedGatewayProcess,
} from '../helpers/tokened-gateway-process.js';
import { assertLevelsBackToZero, levelGauges, waitForLevels } from '../helpers/level-gauges.js';
import { bytesHandler, type ImageServer, startImageServer } from '../inputs/image-server.js';
import { makePng } from '../inputs/image-fixtures.js';

/**
 * Each part drives requests that hold one of the gateway's bounded resources (URL fetches,
 * local render turns, event streams, upload forms) to every ending, sees the resource held on
 * GET /metrics while they run, and then waits for every level gauge to read 0 again.
 */

const UPLOAD_URL = '/vendor/api/v1/uploads';
const REQUEST_TIMEOUT_MS = 3000;
const FETCH_TIMEOUT_MS = 1500;

/** A raw exchange: the bytes that came back so far, and the socket to cut. */
interface RawExchange {
  socket: Socket;
  received: () => string;
  /** Resolves once the server closed the connection or it was cut here. */
  closed: Promise<void>;
}

function openRaw(port: number, head: string, body: Buffer): RawExchange {
  const socket = connect(port, '127.0.0.1');
  let received = '';
  socket.on('error', () => undefined);
  socket.on('data', (chunk: Buffer) => {
    received += chunk.toString('latin1');
  });
  socket.write(head);
  socket.write(body);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return { socket, received: () => received, closed };
}

function headOf(url: string, headers: Record<string, string>, length: number): string {
  const lines = [`POST ${url} HTTP/1.1`, 'Host: 127.0.0.1', `Content-Length: ${length}`];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  return `${lines.join('\r\n')}\r\n\r\n`;
}

function statusOf(text: string): number {
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
}

describe('every level a request holds comes back to 0, however the request ends', () => {
  let gateway: TokenedGatewayProcess;
  let images: ImageServer;
  let png: Buffer;
  /** Answers an image server holds open, ended when the server closes. */
  const held: ServerResponse[] = [];

  before(async () => {
    png = await makePng(256, 256);
    images = await startImageServer();
    gateway = await startTokenedGatewayProcess({
      IMAGEGATE_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
      IMAGEGATE_ALLOW_PRIVATE_IMAGE_URLS: 'true',
      IMAGEGATE_MAX_IMAGE_FETCHES: '2',
      IMAGEGATE_IMAGE_FETCH_TIMEOUT_MS: String(FETCH_TIMEOUT_MS),
      // Two jobs render at once (two per worker) and two may wait: a third waiting is refused.
      IMAGEGATE_LOCAL_WORKERS: '1',
      IMAGEGATE_LOCAL_QUEUE_LIMIT: '2',
    });
  });
  after(async () => {
    for (const response of held) response.destroy();
    await gateway.stop();
    await images.close();
  });

  function generate(body: unknown, signal?: AbortSignal, headers: Record<string, string> = {}) {
    return fetch(`${gateway.url}${GENERATION_URL}`, {
      method: 'POST',
      headers: {
        authorization: gateway.authorization,
        'content-type': 'application/json',
        ...headers,
      },
      body: JSON.stringify(body),
      ...(signal === undefined ? {} : { signal }),
    });
  }

  const withImage = (url: string) =>
    modelABody({ n: 1, size: '768*768' }, [{ text: 'a fox' }, { image: url }]);

  /** Requests whose fetch `signal` will end; their status, or 0 when the caller left. */
  const statusOrGone = (answer: Promise<Response>) =>
    answer.then(
      async (response) => {
        await response.arrayBuffer().catch(() => undefined);
        return response.status;
      },
      () => 0,
    );

  it('gives back URL fetches: answered, stalled past the time-out, cut by the image server, left while fetching and waiting', async () => {
    const ok = images.serve('/ok.png', bytesHandler(png));
    const stall = images.serve('/stall.png', (_request, response) => {
      held.push(response);
      response.writeHead(200, { 'content-type': 'image/png', 'content-length': png.length });
      response.write(png.subarray(0, 64));
    });
    const vanish = images.serve('/vanish.png', (_request, response) => {
      response.writeHead(200, { 'content-type': 'image/png', 'content-length': png.length });
      response.write(png.subarray(0, png.length / 2), () => response.socket?.destroy());
    });
    const hang = images.serve('/hang.png', (_request, response) => {
      held.push(response);
    });

    // Two fetches at once in the node: the third and later wait their turn.
    const ended = await Promise.all(
      [ok, stall, vanish, ok].map((url) => statusOrGone(generate(withImage(url)))),
    );
    assert.deepEqual(ended, [200, 400, 400, 200]);

    const callers = Array.from({ length: 4 }, () => new AbortController());
    const left = callers.map((caller) => statusOrGone(generate(withImage(hang), caller.signal)));
    await waitForLevels(
      gateway,
      (levels) =>
        levels.imagegate_image_fetches_in_flight === 2 &&
        levels.imagegate_image_fetches_waiting === 2,
      'two fetches under way and two waiting',
    );
    for (const caller of callers) caller.abort();
    assert.deepEqual(await Promise.all(left), [0, 0, 0, 0]);
    await assertLevelsBackToZero(gateway);
  });

  it('gives back render turns: answered, refused with the queue full, left while rendering and waiting', async () => {
    const heavy = modelABody({ n: 4, size: '4096*4096' });
    const callers = Array.from({ length: 5 }, () => new AbortController());
    const answers = callers.map((caller) => statusOrGone(generate(heavy, caller.signal)));
    await waitForLevels(
      gateway,
      (levels) =>
        levels.imagegate_render_jobs_running === 2 && levels.imagegate_render_jobs_waiting === 2,
      'two jobs rendering and two waiting',
    );
    // The fifth found the queue full and was refused at once.
    const refused = await Promise.race(answers);
    assert.equal(refused, 503);
    for (const caller of callers) caller.abort();
    const statuses = await Promise.all(answers);
    assert.deepEqual(
      statuses.sort((a, b) => a - b),
      [0, 0, 0, 0, 503],
    );
    await assertLevelsBackToZero(gateway);
    const answered = await generate(modelABody({ n: 1, size: '768*768' }));
    assert.equal(answered.status, 200, await answered.text());
    await assertLevelsBackToZero(gateway);
  });

  it('gives back event streams: left before their first event, left after it, and read to the end', async () => {
    const body = Buffer.from(
      JSON.stringify(
        modelABody({ enable_sequential: true, n: 12, incremental_output: true, size: '2048*2048' }),
      ),
    );
    const head = headOf(
      GENERATION_URL,
      {
        Authorization: gateway.authorization,
        'Content-Type': 'application/json',
        'X-DashScope-SSE': 'enable',
      },
      body.length,
    );
    const beforeFirst = openRaw(gateway.port, head, body);
    beforeFirst.socket.resetAndDestroy();
    // Left as its first event arrives, well before the last of its twelve images.
    const afterFirst = openRaw(gateway.port, head, body);
    afterFirst.socket.on('data', () => {
      if (afterFirst.received().includes('\ndata:')) afterFirst.socket.destroy();
    });
    await afterFirst.closed;
    assert.equal(statusOf(afterFirst.received()), 200);
    assert.doesNotMatch(afterFirst.received(), /"finished":true/);
    await assertLevelsBackToZero(gateway);

    const whole = openRaw(gateway.port, head, body);
    // Read at the first event, not by polling: a whole stream at 2K lasts well under a second
    // here, less than a busy machine may leave between two polls.
    const firstEvent = new Promise<void>((resolve) => {
      whole.socket.on('data', () => {
        if (whole.received().includes('\ndata:')) resolve();
      });
    });
    await Promise.race([firstEvent, whole.closed]);
    const whileOpen = levelGauges(await gateway.gauges());
    assert.equal(
      whileOpen.imagegate_event_streams_open,
      1,
      `the stream counted while open; the gauges stood at ${JSON.stringify(whileOpen)}, ` +
        `and the caller had read: ${whole.received().slice(0, 600)}`,
    );
    // A stream read to the end is over after its last event; the connection stays open.
    await waitForLevels(
      gateway,
      () => whole.received().endsWith('\r\n0\r\n\r\n'),
      'the whole stream read',
      60_000,
    );
    assert.match(whole.received(), /"finished":true/);
    await assertLevelsBackToZero(gateway);
    whole.socket.destroy();
  });

  it('gives back upload forms: saved, cut then ended, cut then reset, cut then silent past the time-out', async () => {
    const form = (index: number) =>
      signedUploadForm(gateway, `held-${index}.png`, Buffer.concat([png, Buffer.alloc(64 * 1024)]));
    const forms = await Promise.all([0, 1, 2, 3].map(form));
    const sent = forms.map(({ contentType, body }, index) =>
      openRaw(
        gateway.port,
        headOf(UPLOAD_URL, { 'Content-Type': contentType }, body.length),
        index === 0 ? body : body.subarray(0, body.length - 30),
      ),
    );
    const [saved, ended, reset, silent] = sent as [
      RawExchange,
      RawExchange,
      RawExchange,
      RawExchange,
    ];
    await waitForLevels(
      gateway,
      (levels) => (levels.imagegate_uploads_in_flight ?? 0) >= 3,
      'three cut forms being read',
    );
    ended.socket.end();
    reset.socket.resetAndDestroy();
    await Promise.all([ended.closed, silent.closed]);
    assert.equal(statusOf(saved.received()), 200, saved.received());
    assert.equal(statusOf(ended.received()), 400, ended.received());
    assert.equal(statusOf(silent.received()), 408, silent.received());
    saved.socket.destroy();
    await assertLevelsBackToZero(gateway);
  });
});
