import type { ServerResponse } from 'node:http';
import { once } from 'node:events';
import type { Socket } from 'node:net';
import type { Readable } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';

/**
 * Whether the connection of `response` is still open once the event loop has polled it again: a
 * close the caller sent a moment ago is seen before anything more is written. Two turns, as the
 * first may end the poll phase that missed the close.
 */
export async function stillOpen(response: ServerResponse): Promise<boolean> {
  await nextTurn();
  await nextTurn();
  return !connectionClosed(response);
}

/**
 * Whether what was just written to `body` (a stream piped into `response`) reached the caller's
 * connection: true once the response has sent its head and neither `body` nor the response holds
 * anything unsent (the socket took every byte); false if the connection closes first.
 */
export async function handedOver(response: ServerResponse, body: Readable): Promise<boolean> {
  for (;;) {
    if (response.headersSent && body.readableLength === 0 && response.writableLength === 0)
      return true;
    if (connectionClosed(response)) return false;
    const socket = response.socket;
    // A caller that reads slowly: the socket takes the rest when it drains, or never.
    if (socket !== null && socket.writableNeedDrain) await drainedOrClosed(socket);
    else await nextTurn();
  }
}

async function drainedOrClosed(socket: Socket): Promise<void> {
  const settled = new AbortController();
  const { signal } = settled;
  await Promise.race([once(socket, 'drain', { signal }), once(socket, 'close', { signal })]).catch(
    () => undefined,
  );
  settled.abort();
}

/** Closed, or half-closed by the caller, which for an answer it reads means gone. */
function connectionClosed(response: ServerResponse): boolean {
  const socket = response.socket;
  return (
    response.destroyed ||
    socket === null ||
    socket.destroyed ||
    socket.readableEnded ||
    !socket.writable
  );
}
