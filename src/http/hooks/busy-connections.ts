import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

/**
 * Closes, once the gateway starts to close, each connection busy with a request as soon as that
 * request is answered, so that a drain ends when its last request does. Node's `server.close()`
 * closes the connections idle at that moment only: a kept-alive connection (every real client
 * keeps them) whose request was in flight went idle after its answer and held the drain until its
 * deadline. An answer not yet begun says `Connection: close`, which Node honours by closing after
 * it and which tells the caller not to send another request there (Fastify says it on requests
 * that arrive during the drain); an answer already under way (an event stream) can no longer say
 * it, and its connection is ended once its last byte is written.
 */
export function addBusyConnectionsHooks(app: FastifyInstance): void {
  const answering = new Set<ServerResponse>();
  app.server.on('request', (_request: IncomingMessage, response: ServerResponse) => {
    answering.add(response);
    response.once('close', () => answering.delete(response));
  });
  app.addHook('preClose', async () => {
    for (const response of answering) closeAfterAnswer(response);
  });
}

function closeAfterAnswer(response: ServerResponse): void {
  if (!response.headersSent) {
    response.setHeader('Connection', 'close');
    return;
  }
  // Node detaches the socket when the answer finishes: hold on to it now.
  const socket = response.socket;
  if (socket === null) return;
  if (response.writableFinished) endAfterWrites(socket);
  else response.once('finish', () => endAfterWrites(socket));
}

/** What Node does after an answer that says `Connection: close`: write out, then close. */
function endAfterWrites(socket: Socket): void {
  socket.end(() => socket.destroy());
}
