import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import sharp from 'sharp';
import { sendJson } from '../fixtures/fake-upstream-server.js';

const IMAGE_SIZE = { width: 96, height: 64 };

/**
 * A DashScope stand-in for load benches: every sync submission, whatever its model, gets one
 * model A image after `delayMs`, and its body is read and dropped, never held, so that bodies of
 * hundreds of MB cost the bench nothing. The image is a real PNG served by the same server.
 */
export interface BodyDroppingDashScope {
  url: string;
  apiKey: string;
  /** How long each submission waits before its answer; may be changed between runs. */
  delayMs: number;
  /** Submissions whose body has arrived whole, answered or not. */
  received: number;
  close(): Promise<void>;
}

export async function startBodyDroppingDashScope(): Promise<BodyDroppingDashScope> {
  const png = await sharp({
    create: { ...IMAGE_SIZE, channels: 3, background: { r: 40, g: 120, b: 200 } },
  })
    .png()
    .toBuffer();
  const sockets = new Set<Socket>();
  const server = createServer((request, response) => {
    if (request.method === 'GET') {
      response.writeHead(200, { 'content-type': 'image/png', 'content-length': png.length });
      response.end(png);
      return;
    }
    request.resume();
    request.on('end', () => {
      upstream.received++;
      void sleep(upstream.delayMs).then(() =>
        sendJson(response, 200, {
          request_id: randomUUID(),
          output: {
            finished: true,
            choices: [
              {
                finish_reason: 'stop',
                message: {
                  role: 'assistant',
                  content: [
                    { type: 'image', image: `${upstream.url}/results/${randomUUID()}.png` },
                  ],
                },
              },
            ],
          },
          usage: { image_count: 1, size: `${IMAGE_SIZE.width}*${IMAGE_SIZE.height}` },
        }),
      );
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const upstream: BodyDroppingDashScope = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    apiKey: 'sk-body-dropping-key',
    delayMs: 0,
    received: 0,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      server.close();
      await once(server, 'close');
    },
  };
  return upstream;
}
