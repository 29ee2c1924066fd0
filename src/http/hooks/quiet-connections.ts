import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';

/**
 * A head already on its way when the drain starts is still read, and answered with the drain's
 * 503 `Overloaded` and `Retry-After`, rather than cut: this long after the last connection
 * queued for the gateway is taken in. Taking them in lasts this long at most, too.
 */
const QUIET_CONNECTION_GRACE_MS = 500;

/**
 * Closes, shortly after the gateway starts to close, every connection that has not yet sent a
 * whole request head. Node's `server.close()` counts such a connection as busy (it closes idle
 * kept-alive ones only) and stops the check that would time its headers out, so one quiet
 * connection (a browser's speculative one, a client pool's spare) held the drain until its
 * deadline. A request in flight is never cut: its connection left this set when its head arrived.
 *
 * Before the listener closes, the gateway accepts the connections the kernel already holds for it
 * (up to the listen backlog on a busy node), for at most the same grace: closing the listener
 * would reset them, and their callers could not tell whether their requests had been read. Once
 * accepted they are quiet connections like any other, and a head that arrives in the grace is
 * answered with the drain's 503. Registered after the load shedder, whose own hook marks the
 * gateway as closing first.
 */
export function addQuietConnectionsHooks(app: FastifyInstance): void {
  const quiet = new QuietConnections(app.server);
  app.addHook('preClose', async () => {
    // Node's own close would do this only after the wait below.
    app.server.closeIdleConnections();
    await quiet.acceptQueued(QUIET_CONNECTION_GRACE_MS);
    // From the last connection taken in, so that its request, already sent, is read.
    quiet.closeAfter(QUIET_CONNECTION_GRACE_MS);
  });
}

/** One turn of the event loop: its poll phase (which accepts connections) comes before. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * The gateway serves plain HTTP (TLS ends in front of it): the socket a request arrives on is the
 * socket the server accepted.
 */
class QuietConnections {
  private readonly sockets = new Set<Socket>();
  private graceOver = false;
  private accepted = 0;

  constructor(server: Server) {
    server.on('connection', (socket: Socket) => {
      // Accepted after the grace, in the moment before the listener closes: nothing will be read.
      if (this.graceOver) {
        socket.destroy();
        return;
      }
      this.accepted++;
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    server.on('request', (request: { socket: Socket }) => {
      this.sockets.delete(request.socket);
    });
  }

  /**
   * Resolves once a whole turn of the event loop has accepted no connection (Node takes one from
   * the kernel's queue per turn), or after `limitMs` when callers keep arriving.
   */
  async acceptQueued(limitMs: number): Promise<void> {
    const started = performance.now();
    let seen: number;
    do {
      seen = this.accepted;
      await nextTurn();
      await nextTurn();
    } while (this.accepted !== seen && performance.now() - started < limitMs);
  }

  closeAfter(graceMs: number): void {
    setTimeout(() => {
      this.graceOver = true;
      for (const socket of this.sockets) socket.destroy();
      this.sockets.clear();
    }, graceMs).unref();
  }
}
