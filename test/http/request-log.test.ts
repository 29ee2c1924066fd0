import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { GenerationRequest } from '../../src/domain/generation-request.js';
import { MODEL_A } from '../../src/domain/models.js';
import type { Principal } from '../../src/domain/principal.js';
import { GatewayError } from '../../src/errors/gateway-error.js';
import { describe as describeRequest, emptyOutcome } from '../../src/ledger/generation-outcome.js';
import type { GenerationContext, Generation } from '../../src/generation/generation-service.js';
import { buildApp } from '../../src/http/app.js';
import {
  createResultStorage,
  type ResultStorage,
} from '../../src/storage/create-result-storage.js';
import { GENERATION_URL, modelABody } from '../helpers/requests.js';

const TOKEN = 'Bearer secret-token-value-7f3a';
const PROMPT = 'a red fox in snow';
const principal: Principal = {
  tokenId: 'tok_42',
  account: 'acme',
  admin: false,
  issuer: 'gateway',
};

type LogLine = Record<string, unknown>;

/** The JSON lines the app logs, and a way to wait for one. */
function capturedLog() {
  const lines: LogLine[] = [];
  const waiting: { match: (line: LogLine) => boolean; resolve: (line: LogLine) => void }[] = [];
  return {
    lines,
    stream: {
      write(text: string) {
        const line = JSON.parse(text) as LogLine;
        lines.push(line);
        for (const waiter of waiting.filter(({ match }) => match(line))) waiter.resolve(line);
      },
    },
    /** The first line that `match` accepts, once it is written. */
    lineMatching(match: (line: LogLine) => boolean): Promise<LogLine> {
      const written = lines.find(match);
      if (written !== undefined) return Promise.resolve(written);
      return new Promise((resolve) => waiting.push({ match, resolve }));
    },
    /** The request line of `requestId`, once it is written. */
    requestLine(requestId: string): Promise<LogLine> {
      return this.lineMatching((line) => line.msg === 'request' && line.reqId === requestId);
    },
  };
}

describe('the request log line and Server-Timing', () => {
  const log = capturedLog();
  let generate: (request: GenerationRequest, context: GenerationContext) => Promise<Generation>;
  const app = buildApp({
    config: { routePrefix: '/vendor', maxBodyBytes: 4096, logLevel: 'info' },
    authenticator: {
      verifyAuthorization: async (header) => {
        if (header === TOKEN) return principal;
        throw new GatewayError('InvalidApiKey', 'missing or invalid token');
      },
    },
    generation: {
      generate: (request, context) => generate(request, context),
      generateUnbilled: () => Promise.reject(new Error('not used')),
    },
    ledger: { record: () => undefined },
    checkReady: async () => undefined,
    version: 'test',
    logStream: log.stream,
  });
  let port = 0;

  before(async () => {
    await app.listen({ host: '127.0.0.1', port: 0 });
    port = (app.server.address() as AddressInfo).port;
  });
  after(() => app.close());

  const post = (payload: object | string, authorization = TOKEN) =>
    app.inject({
      method: 'POST',
      url: `${GENERATION_URL}?trace=1`,
      headers: { authorization, 'content-type': 'application/json' },
      payload,
    });

  it('logs one line per generation with its token id, model, images and timings, and no secrets', async () => {
    generate = async (request) => ({
      ok: true,
      result: {
        imageUrls: ['https://img.test/a.png?signature=s1', 'https://img.test/b.png?signature=s2'],
        width: 1024,
        height: 1024,
        tokens: { input: 0, output: 0 },
      },
      // What the pipeline and settlement say the request came to.
      outcome: {
        description: { ...describeRequest(request), imagesRequested: 2 },
        channel: 'primary',
        upstreamMs: 40,
        storageMs: 5.25,
        imagesReceived: 2,
        imagesDelivered: 2,
        imagesBilled: 2,
        costMicros: 0,
      },
    });
    const response = await post(modelABody({ n: 2 }, [{ text: PROMPT }]));
    assert.equal(response.statusCode, 200, response.body);
    const line = await log.requestLine(String(response.headers['x-request-id']));
    const { ms, gateway_ms, ...fixed } = line as LogLine & { ms: number; gateway_ms: number };
    assert.deepEqual(
      {
        method: fixed.method,
        path: fixed.path,
        status: fixed.status,
        code: fixed.code,
        token_id: fixed.token_id,
        model: fixed.model,
        channel: fixed.channel,
        images_delivered: fixed.images_delivered,
        images_billed: fixed.images_billed,
        upstream_ms: fixed.upstream_ms,
        storage_ms: fixed.storage_ms,
      },
      {
        method: 'POST',
        path: GENERATION_URL,
        status: 200,
        code: undefined,
        token_id: 'tok_42',
        model: MODEL_A,
        channel: 'primary',
        images_delivered: 2,
        images_billed: 2,
        upstream_ms: 40,
        storage_ms: 5,
      },
    );
    assert.equal(typeof ms, 'number');
    assert.equal(gateway_ms, Math.max(0, ms - 40));
    const text = JSON.stringify(line);
    for (const secret of ['secret-token-value', PROMPT, 'signature', 'trace=1'])
      assert.ok(!text.includes(secret), `the log line holds ${secret}`);
    assert.equal(
      log.lines.filter((entry) => entry.reqId === response.headers['x-request-id']).length,
      1,
    );

    const timing = String(response.headers['server-timing']);
    assert.match(timing, /^gateway;dur=\d+(\.\d)?, upstream;dur=40, storage;dur=5\.3$/);
  });

  it('logs the code of a refusal, and times the answers of 4xx and 5xx', async () => {
    const unauthenticated = await post(modelABody(), 'Bearer wrong');
    assert.equal(unauthenticated.statusCode, 401);
    assert.match(String(unauthenticated.headers['server-timing']), /^gateway;dur=\d+(\.\d)?$/);
    const refusedLine = await log.requestLine(String(unauthenticated.headers['x-request-id']));
    assert.equal(refusedLine.code, 'InvalidApiKey');
    assert.equal(refusedLine.token_id, undefined);
    assert.equal(refusedLine.status, 401);

    const tooLarge = await post({ ...modelABody(), padding: 'x'.repeat(5000) });
    assert.equal(tooLarge.statusCode, 413);
    assert.match(String(tooLarge.headers['server-timing']), /^gateway;dur=\d+(\.\d)?$/);

    generate = async (request) => ({
      ok: false,
      error: new GatewayError('NoAvailableChannel', 'every channel failed'),
      outcome: { ...emptyOutcome(describeRequest(request)), channel: 'primary', upstreamMs: 25 },
    });
    const failed = await post(modelABody());
    assert.equal(failed.statusCode, 503);
    assert.match(
      String(failed.headers['server-timing']),
      /^gateway;dur=\d+(\.\d)?, upstream;dur=25$/,
    );
    const failedLine = await log.requestLine(String(failed.headers['x-request-id']));
    assert.equal(failedLine.code, 'NoAvailableChannel');
    assert.equal(failedLine.model, MODEL_A);
    assert.equal(failedLine.upstream_ms, 25);
    assert.equal(failedLine.images_delivered, 0);
  });

  it('logs a caller who leaves before the answer as 499 CallerGone', async () => {
    let started: () => void = () => undefined;
    const running = new Promise<void>((resolve) => (started = resolve));
    generate = (_request, { signal }) => {
      started();
      return new Promise((_resolve, reject) =>
        signal.addEventListener('abort', () => reject(signal.reason as Error)),
      );
    };
    const outgoing = httpRequest({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: GENERATION_URL,
      headers: {
        authorization: TOKEN,
        'content-type': 'application/json',
        'x-request-id': 'leaving-caller-1',
      },
    });
    outgoing.on('error', () => undefined);
    outgoing.end(JSON.stringify(modelABody()));
    await running;
    outgoing.destroy();
    const line = await log.requestLine('leaving-caller-1');
    assert.equal(line.status, 499);
    assert.equal(line.code, 'CallerGone');
    assert.equal(line.model, MODEL_A);
    assert.equal(line.token_id, 'tok_42');
    // An expected event, logged at info: never an error with a stack trace.
    const noted = await log.lineMatching(
      (candidate) =>
        candidate.reqId === 'leaving-caller-1' &&
        candidate.msg === 'caller disconnected before the answer',
    );
    assert.equal(noted.level, 30);
    assert.deepEqual(
      log.lines.filter(
        (candidate) => candidate.reqId === 'leaving-caller-1' && Number(candidate.level) >= 40,
      ),
      [],
    );
  });

  it('logs URLs refused before routing like any other request', async () => {
    for (const [url, status, code] of [
      ['/api/v1/tasks/%FF?signature=s1', 400, 'InvalidParameter'],
      [`/v1/models/${'a'.repeat(500)}`, 404, 'NotFound'],
    ] as const) {
      const response = await fetch(`http://127.0.0.1:${port}${url}`);
      assert.equal(response.status, status);
      await response.arrayBuffer();
      const line = await Promise.race([
        log.requestLine(String(response.headers.get('x-request-id'))),
        sleep(2000).then(() => assert.fail(`${url}: no request line`)),
      ]);
      assert.deepEqual(
        [line.method, line.path, line.status, line.code],
        ['GET', url.split('?')[0], status, code],
      );
      assert.equal(typeof line.ms, 'number');
    }
  });

  it('logs requests outside generation with their path, status and time only', async () => {
    const response = await app.inject({ url: '/healthz?probe=1' });
    const line = await log.requestLine(String(response.headers['x-request-id']));
    const { level, time, pid, hostname, reqId, msg, ms, ...rest } = line;
    assert.deepEqual([level, msg, reqId], [30, 'request', response.headers['x-request-id']]);
    assert.ok([time, pid, hostname].every((field) => field !== undefined));
    assert.equal(typeof ms, 'number');
    assert.deepEqual(rest, { method: 'GET', path: '/healthz', status: 200 });
    assert.equal(response.headers['server-timing'], undefined);
  });
});

describe('the request line of an image download', () => {
  const log = capturedLog();
  let dataDir: string;
  let storage: ResultStorage;
  let app: ReturnType<typeof buildApp>;
  let port = 0;
  let imagePath = '';

  before(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'imagegate-request-log-'));
    storage = createResultStorage({
      storage: { kind: 'disk', dataDir },
      publicBaseUrl: 'http://127.0.0.1',
      signingKey: new Uint8Array(32).fill(3),
      uploadSigningKey: new Uint8Array(32).fill(4),
    });
    app = buildApp({
      config: { routePrefix: '/vendor', maxBodyBytes: 4096, logLevel: 'info' },
      authenticator: {
        verifyAuthorization: async () => {
          throw new GatewayError('InvalidApiKey', 'no tokens here');
        },
      },
      generation: {
        generate: () => Promise.reject(new Error('not used')),
        generateUnbilled: () => Promise.reject(new Error('not used')),
      },
      ledger: { record: () => undefined },
      checkReady: async () => undefined,
      version: 'test',
      logStream: log.stream,
      images: { blobs: storage.blobs, urls: storage.urls },
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    port = (app.server.address() as AddressInfo).port;
    const png = Buffer.concat([
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
      randomBytes(200_000),
    ]);
    const url = new URL(await storage.results.save(png));
    imagePath = url.pathname + url.search;
  });
  after(async () => {
    await app.close();
    await storage.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('is 200, not 499, when the caller hangs up as soon as it has every byte', async () => {
    // Such a caller (curl, a browser) closes once Content-Length bytes are in. Before the file's
    // stream ended with its last bytes, one more read of the file came between them and the
    // answer's end, and about one download in fifteen was logged and counted as CallerGone.
    const downloads = 40;
    for (let index = 0; index < downloads; index++)
      await downloadThenHangUp(port, imagePath, `download-${index}`);
    const statuses = await Promise.all(
      Array.from(
        { length: downloads },
        async (_, index) => (await log.requestLine(`download-${index}`)).status,
      ),
    );
    assert.deepEqual(statuses, Array<number>(downloads).fill(200));
  });
});

/** A GET over a fresh socket that is destroyed the moment the whole body has arrived. */
function downloadThenHangUp(port: number, path: string, requestId: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(`GET ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\nx-request-id: ${requestId}\r\n\r\n`);
    });
    let received = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const headEnd = received.indexOf('\r\n\r\n');
      if (headEnd === -1) return;
      const length = /content-length: (\d+)/i.exec(received.subarray(0, headEnd).toString());
      if (length === null) return reject(new Error('no Content-Length'));
      if (received.length - headEnd - 4 < Number(length[1])) return;
      socket.destroy();
      resolve();
    });
    socket.on('error', reject);
  });
}
