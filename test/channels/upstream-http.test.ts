import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';
import { after, describe, it } from 'node:test';
import type { StreamedBody } from '../../src/channels/streamed-json.js';
import { UpstreamHttp } from '../../src/channels/upstream-http.js';

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

const OK = 'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}';

describe('UpstreamHttp request bodies', () => {
  const http = new UpstreamHttp();
  const servers: Server[] = [];
  after(async () => {
    await http.close();
    for (const server of servers) server.close();
  });

  const post = (url: string, body: Buffer | StreamedBody) =>
    http.send({
      method: 'POST',
      url,
      headers: { 'content-type': 'application/json' },
      body,
      signal: AbortSignal.timeout(20_000),
      maxResponseBytes: 1024,
    });

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
