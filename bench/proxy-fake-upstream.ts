// A DashScope stand-in for the proxy bench, run in a process of its own so that its CPU is not
// counted as the gateway's. Every POST gets the multimodal-generation answer (one image that
// points back here) at once, or after the delay set with `POST /__delay?ms=N`; `GET /image.png`
// serves that PNG for re-hosting, a small one unless `POST /__image?bytes=N` asked for one of about
// N bytes (0: the small one again); `GET /__last` tells when the last POST body had arrived whole
// and how large it was; `GET /__counts` how many calls wait out the delay now, how many were
// answered so far and how many connections it has accepted. `POST /__arrivals?keep=N` starts
// noting when each of the next N generation calls arrives, and `GET /__arrivals` tells how long
// after the first of them each came. It prints `{"port":N}` once it listens.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { greyPng, largestGreyPng } from './proxy-png.js';

const IMAGE_SIDE = 64;
const LARGE_IMAGE_WIDTH = 1024;
const smallPng = greyPng(IMAGE_SIDE, IMAGE_SIDE);
let png = smallPng;

let delayMs = 0;
let answered = 0;
let waiting = 0;
let connections = 0;
let lastBody = { bytes: 0, receivedAt: 0 };
/** When the generation calls noted since the last `POST /__arrivals` arrived, at most `keep`. */
let arrivals: number[] = [];
let arrivalsToKeep = 0;

const server = createServer((request, response) => {
  const control = request.url?.startsWith('/__') === true;
  if (request.method === 'POST' && !control && arrivals.length < arrivalsToKeep)
    arrivals.push(performance.now());
  if (request.method === 'GET' && request.url === '/image.png') {
    response.writeHead(200, { 'content-type': 'image/png', 'content-length': png.length });
    response.end(png);
    return;
  }
  if (request.method === 'GET' && request.url === '/__last') {
    sendJson(response, 200, lastBody);
    return;
  }
  if (request.method === 'GET' && request.url === '/__counts') {
    sendJson(response, 200, { waiting, answered, connections });
    return;
  }
  if (request.method === 'GET' && request.url === '/__arrivals') {
    const first = arrivals[0] ?? 0;
    sendJson(response, 200, { afterFirstMs: arrivals.map((at) => at - first) });
    return;
  }
  if (request.method !== 'POST') {
    sendJson(response, 404, { code: 'NotFound', message: `no route ${request.url ?? ''}` });
    return;
  }
  void drain(request).then((bytes) => {
    if (request.url?.startsWith('/__delay') === true) {
      delayMs = Number(new URL(request.url, 'http://fake').searchParams.get('ms') ?? 0);
      response.writeHead(204).end();
      return;
    }
    if (request.url?.startsWith('/__arrivals') === true) {
      arrivals = [];
      arrivalsToKeep = Number(new URL(request.url, 'http://fake').searchParams.get('keep') ?? 0);
      response.writeHead(204).end();
      return;
    }
    if (request.url?.startsWith('/__image') === true) {
      const size = Number(new URL(request.url, 'http://fake').searchParams.get('bytes') ?? 0);
      png = size > 0 ? largestGreyPng(LARGE_IMAGE_WIDTH, size) : smallPng;
      response.writeHead(204).end();
      return;
    }
    lastBody = { bytes, receivedAt: Date.now() };
    if (delayMs === 0) {
      answer(response);
      return;
    }
    waiting += 1;
    setTimeout(() => {
      waiting -= 1;
      answer(response);
    }, delayMs);
  });
});

function answer(response: ServerResponse): void {
  const { port } = server.address() as AddressInfo;
  sendJson(response, 200, {
    request_id: `fake-${++answered}`,
    output: {
      choices: [
        {
          finish_reason: 'stop',
          message: {
            role: 'assistant',
            content: [{ type: 'image', image: `http://127.0.0.1:${port}/image.png` }],
          },
        },
      ],
    },
    usage: { image_count: 1, width: IMAGE_SIDE, height: IMAGE_SIDE },
  });
}

function sendJson(response: ServerResponse, status: number, body: object): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  });
  response.end(text);
}

async function drain(request: IncomingMessage): Promise<number> {
  let bytes = 0;
  for await (const chunk of request) bytes += (chunk as Buffer).length;
  return bytes;
}

server.on('connection', () => {
  connections += 1;
});
server.keepAliveTimeout = 60_000;
// A proxy meeting a thousand callers opens a thousand connections here at once. Node's default
// backlog (511) would drop some of their SYNs, each retried a second later: the fake's limit,
// not the proxy's, in the crowd's p99. The kernel caps the backlog at net.core.somaxconn.
server.listen({ port: 0, host: '127.0.0.1', backlog: 4096 }, () => {
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
});
process.on('SIGTERM', () => process.exit(0));
