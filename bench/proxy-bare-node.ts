// The floor under the gateway: the least a Node.js proxy does per request, with the libraries the
// gateway uses for HTTP. node:http takes the POST, undici sends its body on to the upstream over a
// pooled keep-alive connection, and the JSON answer is parsed and written back. No auth, no
// validation, no ledger: what the gateway adds over this row is the gateway's own cost. Run in a
// process of its own with the upstream's URL as its argument; prints `{"port":N}` once it listens.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';
import { SYNC_PATH } from '../src/channels/dashscope/dashscope-protocol.js';

const upstream = new Pool(process.argv[2] ?? 'http://127.0.0.1:1', { connections: 1024 });

const server = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  request.on('end', () => {
    const body = Buffer.concat(chunks);
    JSON.parse(body.toString('utf8'));
    upstream
      .request({
        path: SYNC_PATH,
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench' },
        body,
      })
      .then(async (answer) => {
        const text = JSON.stringify(await answer.body.json());
        response.writeHead(answer.statusCode, {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(text),
        });
        response.end(text);
      })
      .catch((error: unknown) => {
        response.writeHead(502).end(String(error));
      });
  });
});

server.keepAliveTimeout = 60_000;
// The gateway's own backlog (IMAGEGATE_LISTEN_BACKLOG's default): at Node's 511 the kernel drops
// SYNs of the crowd's thousand callers, and wrk, whose clock starts once connected, never counts
// the second each of those callers loses.
server.listen({ port: 0, host: '127.0.0.1', backlog: 4096 }, () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
});
process.on('SIGTERM', () => process.exit(0));
