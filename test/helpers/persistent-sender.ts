import { connect } from 'node:net';

/** What a caller that sends its whole body, answered or not, saw of the answer. */
export interface PersistentAnswer {
  /** The status line's code; 0 when none arrived. */
  status: number;
  body: string;
  /** The head and every byte of the body it declares arrived. */
  whole: boolean;
  /** How the connection ended for the caller: 'closed' by the server, or a socket error's code. */
  ending: string;
}

export interface PersistentSend {
  /** The request head up to its last header, each line ending CRLF; the length header is added. */
  head: string;
  body: Buffer;
  /** `as-is`: the head says how the body is framed, and the body is sent as it is. */
  framing: 'length' | 'chunked' | 'as-is';
  /** Bytes per write (and per chunk when chunked). */
  writeBytes?: number;
  /** Gives up this long after the start, resolving with what arrived. */
  giveUpAfterMs?: number;
}

/** Whether `bytes` hold a whole answer: its head and as many body bytes as it declares. */
function wholeAnswer(bytes: Buffer): { status: number; body: string } | undefined {
  const end = bytes.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const head = bytes.subarray(0, end).toString('latin1');
  const length = Number(/^content-length: *(\d+)/im.exec(head)?.[1] ?? NaN);
  if (!Number.isSafeInteger(length) || bytes.length - end - 4 < length) return undefined;
  return {
    status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0),
    body: bytes.subarray(end + 4, end + 4 + length).toString('utf8'),
  };
}

/**
 * A caller that writes its whole body as fast as the connection takes it, whatever the server
 * answers in the meantime (as many HTTP clients do), and reads the answer alongside. Resolves once
 * the connection ends or the time is up, with what the caller could read.
 */
export function sendWholeBodyAnyway(port: number, send: PersistentSend): Promise<PersistentAnswer> {
  const writeBytes = send.writeBytes ?? 64 * 1024;
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const received: Buffer[] = [];
    let ending = 'gave up';
    let settled = false;
    const settle = () => {
      if (settled) return;
      settled = true;
      clearTimeout(giveUp);
      socket.destroy();
      const answer = wholeAnswer(Buffer.concat(received));
      const partial = Buffer.concat(received).toString('latin1');
      resolve({
        status: answer?.status ?? Number(/^HTTP\/1\.1 (\d{3})/.exec(partial)?.[1] ?? 0),
        body: answer?.body ?? '',
        whole: answer !== undefined,
        ending,
      });
    };
    const giveUp = setTimeout(settle, send.giveUpAfterMs ?? 30_000);
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    socket.on('error', (error: NodeJS.ErrnoException) => {
      ending = error.code ?? error.message;
    });
    socket.on('close', () => {
      if (ending === 'gave up') ending = 'closed';
      settle();
    });
    socket.on('connect', () => {
      const length = {
        chunked: 'Transfer-Encoding: chunked\r\n',
        length: `Content-Length: ${send.body.length}\r\n`,
        'as-is': '',
      }[send.framing];
      socket.write(`${send.head}${length}\r\n`);
      let offset = 0;
      const writeMore = () => {
        while (offset < send.body.length && !socket.destroyed) {
          const piece = send.body.subarray(offset, offset + writeBytes);
          offset += piece.length;
          const framed =
            send.framing === 'chunked'
              ? Buffer.concat([
                  Buffer.from(`${piece.length.toString(16)}\r\n`),
                  piece,
                  Buffer.from(offset >= send.body.length ? '\r\n0\r\n\r\n' : '\r\n'),
                ])
              : piece;
          if (!socket.write(framed)) {
            socket.once('drain', writeMore);
            return;
          }
        }
      };
      writeMore();
    });
  });
}
