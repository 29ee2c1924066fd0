// The floor under a gateway built on Fastify, the gateway's framework: the bare Node.js proxy's
// work (bench/proxy-bare-node.ts) behind one Fastify route, with Fastify's own JSON body parser and
// reply. No auth, no validation, no ledger: what lies between this row and the bare Node.js proxy
// is the framework's cost; what lies above it is the gateway's own. Run in a process of its own
// with the upstream's URL as its argument; prints `{"port":N}` once it listens.
import Fastify from 'fastify';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';
import { SYNC_PATH } from '../src/channels/dashscope/dashscope-protocol.js';

const upstream = new Pool(process.argv[2] ?? 'http://127.0.0.1:1', { connections: 1024 });
const app = Fastify({ logger: false, keepAliveTimeout: 60_000 });

app.post(SYNC_PATH, async (request, reply) => {
  const answer = await upstream.request({
    path: SYNC_PATH,
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench' },
    body: JSON.stringify(request.body),
  });
  return reply.code(answer.statusCode).send(await answer.body.json());
});

// The same backlog as the gateway and the other references (see bench/proxy-bare-node.ts).
await app.listen({ port: 0, host: '127.0.0.1', backlog: 4096 });
process.stdout.write(`${JSON.stringify({ port: (app.server.address() as AddressInfo).port })}\n`);
process.on('SIGTERM', () => process.exit(0));
