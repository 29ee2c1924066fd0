import { once } from 'node:events';
import { connect, type Socket } from 'node:net';

/** An answer read off a raw socket, and whether the server closed the connection after it. */
export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The server closed the socket (it did not wait for, or drain, the rest of our body). */
  closedByServer: boolean;
  /** Milliseconds from sending the head to reading the whole answer. */
  ms: number;
}

/**
 * Sends `head` (and `body`, if given) on a new connection and reads the first answer; the body
 * may be left unsent, as a slow or stalled client would. Resolves once the answer is whole and the
 * socket closed, or `waitForCloseMs` after the answer if the server keeps the socket open.
 */
export function rawExchange(
  port: number,
  head: string,
  options: {
    body?: Buffer | string;
    waitForCloseMs?: number;
    /** Hang up after this long without a whole answer (resolves with status 0). */
    giveUpAfterMs?: number;
  } = {},
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket: Socket = connect(port, '127.0.0.1');
    let received = Buffer.alloc(0);
    let answer: Omit<RawAnswer, 'closedByServer'> | undefined;
    let timer: NodeJS.Timeout | undefined;
    const finish = (closedByServer: boolean) => {
      clearTimeout(timer);
      clearTimeout(giveUp);
      socket.destroy();
      if (answer === undefined) reject(new Error(`no answer: ${received.toString()}`));
      else resolve({ ...answer, closedByServer });
    };
    const giveUp =
      options.giveUpAfterMs === undefined
        ? undefined
        : setTimeout(() => {
            if (answer !== undefined) return;
            answer = { status: 0, headers: {}, body: '', ms: Date.now() - started };
            finish(false);
          }, options.giveUpAfterMs);
    socket.on('error', () => undefined);
    socket.on('connect', () => {
      socket.write(head);
      if (options.body !== undefined) socket.write(options.body);
    });
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (answer === undefined) {
        answer = parse(received, started);
        if (answer !== undefined)
          timer = setTimeout(() => finish(false), options.waitForCloseMs ?? 1000);
      }
    });
    socket.on('close', () => finish(true));
  });
}

/**
 * Writes `requests` at once on one connection and reads the answers, each as [status,
 * Connection header], until the server closes the connection or stays silent for half a second.
 */
export async function pipelinedExchange(
  port: number,
  requests: readonly string[],
): Promise<[number, string][]> {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  await once(socket, 'connect');
  socket.write(requests.join(''));
  let text = '';
  await new Promise<void>((resolve) => {
    let quiet = setTimeout(resolve, 500);
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      clearTimeout(quiet);
      quiet = setTimeout(resolve, 500);
    });
    socket.on('close', () => {
      clearTimeout(quiet);
      resolve();
    });
  });
  socket.destroy();
  return [...text.matchAll(/HTTP\/1\.1 (\d{3})[^\r]*\r\n((?:[^\r]+\r\n)*)\r\n/g)].map((match) => [
    Number(match[1]),
    /^connection: *(.+)$/im.exec(match[2] ?? '')?.[1]?.trim() ?? '',
  ]);
}

function parse(bytes: Buffer, started: number): Omit<RawAnswer, 'closedByServer'> | undefined {
  const text = bytes.toString('latin1');
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers['content-length'] ?? 0);
  const body = bytes.subarray(Buffer.byteLength(text.slice(0, end + 4), 'latin1'));
  if (body.length < length) return undefined;
  return {
    status: Number(statusLine?.split(' ')[1]),
    headers,
    body: body.subarray(0, length).toString('utf8'),
    ms: Date.now() - started,
  };
}

/** The head of a generation POST, declaring `length` body bytes. */
export function generationHead(
  url: string,
  authorization: string,
  length: number | 'chunked',
  extra: Record<string, string> = {},
): string {
  const lines = [
    `POST ${url} HTTP/1.1`,
    'Host: 127.0.0.1',
    `Authorization: ${authorization}`,
    'Content-Type: application/json',
    length === 'chunked' ? 'Transfer-Encoding: chunked' : `Content-Length: ${length}`,
    ...Object.entries(extra).map(([name, value]) => `${name}: ${value}`),
  ];
  return `${lines.join('\r\n')}\r\n\r\n`;
}
