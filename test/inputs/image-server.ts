// An HTTP server on 127.0.0.1 (ephemeral port) that serves whatever each test registers.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Handler = (request: IncomingMessage, response: ServerResponse) => void;

export interface ImageServer {
  port: number;
  /** Registers `handler` under `path` and returns the URL `http://127.0.0.1:<port><path>`. */
  serve(path: string, handler: Handler): string;
  /** How many requests each path has received. */
  hits(path: string): number;
  close(): Promise<void>;
}

export async function startImageServer(): Promise<ImageServer> {
  const handlers = new Map<string, Handler>();
  const hitCounts = new Map<string, number>();
  const server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://x').pathname;
    hitCounts.set(path, (hitCounts.get(path) ?? 0) + 1);
    const handler = handlers.get(path);
    if (handler === undefined) {
      response.writeHead(404).end();
      return;
    }
    handler(request, response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    serve(path, handler) {
      handlers.set(path, handler);
      return `http://127.0.0.1:${port}${path}`;
    },
    hits: (path) => hitCounts.get(path) ?? 0,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Answers with `bytes`, with a Content-Length unless `chunked`. */
export function bytesHandler(
  bytes: Buffer,
  options: { contentType?: string; chunked?: boolean } = {},
): Handler {
  return (_request, response) => {
    response.setHeader('content-type', options.contentType ?? 'application/octet-stream');
    if (options.chunked !== true) response.setHeader('content-length', bytes.length);
    const chunkSize = 256 * 1024;
    for (let offset = 0; offset < bytes.length; offset += chunkSize) {
      response.write(bytes.subarray(offset, offset + chunkSize));
    }
    response.end();
  };
}

export function redirectHandler(location: string, status = 302): Handler {
  return (_request, response) => response.writeHead(status, { location }).end();
}

export function statusHandler(status: number): Handler {
  return (_request, response) => response.writeHead(status).end('no image here');
}
