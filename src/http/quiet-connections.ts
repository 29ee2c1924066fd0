import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

/**
 * A head already on its way when the drain starts is still read, and answered with the drain's
 * 503 `Overloaded` and `Retry-After`, rather than cut: this long after the drain begins.
 */
const QUIET_CONNECTION_GRACE_MS = 500;

/**
 * Closes, shortly after the gateway starts to close, every connection that has not yet sent a
 * whole request head. Node's `server.close()` counts such a connection as busy (it closes idle
 * kept-alive ones only) and stops the check that would time its headers out, so one quiet
 * connection (a browser's speculative one, a client pool's spare) held the drain until its
 * deadline. A request in flight is never cut: its connection left this set when its head arrived.
 */
export function closeQuietConnectionsOnClose(app: FastifyInstance): void {
  const quiet = new QuietConnections(app.server);
  app.addHook('preClose', (done) => {
    quiet.closeAfter(QUIET_CONNECTION_GRACE_MS);
    done();
  });
}

/**
 * The gateway serves plain HTTP (TLS ends in front of it): the socket a request arrives on is the
 * socket the server accepted.
 */
class QuietConnections {
  private readonly sockets = new Set<Socket>();
  private closing = false;

  constructor(server: Server) {
    server.on('connection', (socket: Socket) => {
      // Accepted in the moment between the hook and the listener's close: nothing will be served.
      if (this.closing) {
        socket.destroy();
        return;
      }
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    server.on('request', (request: { socket: Socket }) => {
      this.sockets.delete(request.socket);
    });
  }

  closeAfter(graceMs: number): void {
    this.closing = true;
    setTimeout(() => {
      for (const socket of this.sockets) socket.destroy();
      this.sockets.clear();
    }, graceMs).unref();
  }
}
