import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';
import { after, describe, it } from 'node:test';
import type { StreamedBody } from '../../src/channels/streamed-json.js';
import { UpstreamHttp } from '../../src/channels/upstream-http.js';
import { freePort } from '../helpers/free-port.js';

const CHUNK = Buffer.alloc(64 * 1024, 'A');

/** `count` chunks of 64 KiB, made as they are asked for. */
function streamed(count: number): StreamedBody {
  return {
    byteLength: count * CHUNK.length,
    *chunks() {
      for (let index = 0; index < count; index++) yield CHUNK;
    },
  };
}

/** What a raw TCP upstream saw of one request, and how it ended the connection. */
interface Seen {
  head: string;
  bodyBytes: number;
}

/**
 * An upstream on a raw socket, so that it can stop at any byte: `onBody` is told how many body
 * bytes have come and returns what to do.
 */
async function rawUpstream(
  onBody: (bodyBytes: number, declared: number, socket: Socket) => void,
): Promise<{ url: string; seen: Promise<Seen>; server: Server }> {
  let resolveSeen: (seen: Seen) => void = () => undefined;
  const seen = new Promise<Seen>((resolve) => {
    resolveSeen = resolve;
  });
  const server = createServer((socket) => {
    let buffered = Buffer.alloc(0);
    let head: string | undefined;
    let bodyBytes = 0;
    let declared = 0;
    socket.on('error', () => undefined);
    socket.on('data', (data: Buffer) => {
      if (head === undefined) {
        buffered = Buffer.concat([buffered, data]);
        const end = buffered.indexOf('\r\n\r\n');
        if (end === -1) return;
        head = buffered.subarray(0, end).toString('latin1');
        declared = Number(/content-length: (\d+)/i.exec(head)?.[1]);
        bodyBytes = buffered.length - end - 4;
      } else bodyBytes += data.length;
      onBody(bodyBytes, declared, socket);
      if (socket.destroyed || bodyBytes >= declared) resolveSeen({ head, bodyBytes });
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  assert.ok(address !== null && typeof address === 'object');
  return { url: `http://127.0.0.1:${address.port}/`, seen, server };
}

/**
 * A client for one describe block, closed after it with the servers its tests add to `servers`.
 * `post` sends JSON whose answer may be 1 KiB at most, within `signal` (20 s unless told).
 */
function suiteClient() {
  const http = new UpstreamHttp();
  const servers: Server[] = [];
  after(async () => {
    await http.close();
    for (const server of servers) server.close();
  });
  const post = (url: string, body: Buffer | StreamedBody, signal = AbortSignal.timeout(20_000)) =>
    http.send({
      method: 'POST',
      url,
      headers: { 'content-type': 'application/json' },
      body,
      signal,
      maxResponseBytes: 1024,
    });
  return { post, servers };
}

const OK = 'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}';

describe('UpstreamHttp request bodies', () => {
  const { post, servers } = suiteClient();

  it('sends a streamed body whole, under a Content-Length that counts every byte', async () => {
    const upstream = await rawUpstream((bodyBytes, declared, socket) => {
      if (bodyBytes >= declared) socket.end(OK);
    });
    servers.push(upstream.server);
    const outcome = await post(upstream.url, streamed(40));
    assert.equal(outcome.kind, 'response');
    const seen = await upstream.seen;
    assert.match(seen.head, new RegExp(`content-length: ${40 * CHUNK.length}$`, 'im'));
    assert.equal(seen.bodyBytes, 40 * CHUNK.length);
  });

  it('still sends a Buffer body with its length', async () => {
    const upstream = await rawUpstream((bodyBytes, declared, socket) => {
      if (bodyBytes >= declared) socket.end(OK);
    });
    servers.push(upstream.server);
    const outcome = await post(upstream.url, Buffer.from('{"a":1}'));
    assert.equal(outcome.kind, 'response');
    assert.match((await upstream.seen).head, /content-length: 7$/im);
  });

  it('reports a body cut off part-way as not sent: the upstream cannot have acted on it', async () => {
    // 32 MiB: far more than the loopback socket buffers hold, so the cut comes mid-body.
    const upstream = await rawUpstream((bodyBytes, _declared, socket) => {
      if (bodyBytes >= 1024 * 1024) socket.destroy();
    });
    servers.push(upstream.server);
    const outcome = await post(upstream.url, streamed(512));
    assert.equal(outcome.kind, 'failed');
    assert.equal(outcome.requestSent, false);
    assert.equal(outcome.aborted, false);
    assert.ok((await upstream.seen).bodyBytes < 512 * CHUNK.length);
  });

  it('reports a body read whole before the connection dropped as sent: it may have been acted on', async () => {
    const upstream = await rawUpstream((bodyBytes, declared, socket) => {
      if (bodyBytes >= declared) socket.destroy();
    });
    servers.push(upstream.server);
    const outcome = await post(upstream.url, streamed(40));
    assert.equal(outcome.kind, 'failed');
    assert.equal(outcome.requestSent, true);
  });
});

/**
 * An upstream that takes connections and never reads from them: a large body stays in the
 * socket buffers, so it is never all sent.
 */
async function deafUpstream(): Promise<{ url: string; server: Server; connected: Promise<void> }> {
  let connected: () => void = () => undefined;
  const accepted = new Promise<void>((resolve) => {
    connected = resolve;
  });
  const server = createServer((socket) => {
    socket.pause();
    socket.on('error', () => undefined);
    connected();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  assert.ok(address !== null && typeof address === 'object');
  return { url: `http://127.0.0.1:${address.port}/`, server, connected: accepted };
}

/** The facts failover reads from a failed exchange. */
function failureFacts(outcome: Awaited<ReturnType<UpstreamHttp['send']>>) {
  assert.equal(outcome.kind, 'failed');
  return { requestSent: outcome.requestSent, aborted: outcome.aborted };
}

describe('UpstreamHttp: whether the upstream may have accepted a request', () => {
  const { post, servers } = suiteClient();

  it('a refused connection sent nothing', async () => {
    const outcome = await post(`http://127.0.0.1:${await freePort()}/`, Buffer.from('{}'));
    assert.deepEqual(failureFacts(outcome), { requestSent: false, aborted: false });
    assert.equal(outcome.kind === 'failed' && outcome.detail, 'connection refused');
  });

  it('a connection reset as soon as the head arrived, the body still on its way, sent nothing', async () => {
    const upstream = await rawUpstream((_bodyBytes, _declared, socket) => socket.destroy());
    servers.push(upstream.server);
    const outcome = await post(upstream.url, streamed(512));
    assert.deepEqual(failureFacts(outcome), { requestSent: false, aborted: false });
  });

  it('a Buffer body read whole before the connection was reset was sent', async () => {
    const upstream = await rawUpstream((bodyBytes, declared, socket) => {
      if (bodyBytes >= declared) socket.resetAndDestroy();
    });
    servers.push(upstream.server);
    const outcome = await post(upstream.url, Buffer.from('{"prompt":"a cat"}'));
    assert.deepEqual(failureFacts(outcome), { requestSent: true, aborted: false });
  });

  it('a time-out while the body was still being sent is an abort of a request not sent', async () => {
    const upstream = await deafUpstream();
    servers.push(upstream.server);
    const timer = new AbortController();
    const outcome = post(upstream.url, streamed(512), timer.signal);
    await upstream.connected;
    timer.abort(new Error('attempt timed out'));
    assert.deepEqual(failureFacts(await outcome), { requestSent: false, aborted: true });
  });

  it('a time-out after the body was sent, waiting for the answer, is an abort of a request sent', async () => {
    const upstream = await rawUpstream(() => undefined);
    servers.push(upstream.server);
    const timer = new AbortController();
    const outcome = post(upstream.url, streamed(8), timer.signal);
    assert.equal((await upstream.seen).bodyBytes, 8 * CHUNK.length);
    timer.abort(new Error('attempt timed out'));
    assert.deepEqual(failureFacts(await outcome), { requestSent: true, aborted: true });
  });

  it('a body the upstream reads slowly, a little at a time, is sent whole and answered', async () => {
    const upstream = await rawUpstream((bodyBytes, declared, socket) => {
      if (bodyBytes >= declared) return void socket.end(OK);
      // Stops reading for a moment after every read: the gateway waits for the socket to drain.
      socket.pause();
      setImmediate(() => socket.resume());
    });
    servers.push(upstream.server);
    const outcome = await post(upstream.url, streamed(64));
    assert.equal(outcome.kind, 'response');
    assert.equal((await upstream.seen).bodyBytes, 64 * CHUNK.length);
  });

  it('an answer over the size limit fails as a request sent', async () => {
    const upstream = await rawUpstream((bodyBytes, declared, socket) => {
      if (bodyBytes >= declared)
        socket.end(`HTTP/1.1 200 OK\r\ncontent-length: 4096\r\n\r\n${'x'.repeat(4096)}`);
    });
    servers.push(upstream.server);
    const outcome = await post(upstream.url, Buffer.from('{}'));
    assert.deepEqual(failureFacts(outcome), { requestSent: true, aborted: false });
  });

  it('a signal aborted before the call sends nothing', async () => {
    const upstream = await rawUpstream(() => undefined);
    servers.push(upstream.server);
    const outcome = await post(upstream.url, Buffer.from('{}'), AbortSignal.abort());
    assert.deepEqual(failureFacts(outcome), { requestSent: false, aborted: true });
  });
});
