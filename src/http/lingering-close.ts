import type { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import type { FastifyInstance, FastifyReply } from 'fastify';

/** How long, and how much, a connection is read after an answer that came before its body. */
export interface LingeringBounds {
  /** Longest time the rest of a body is read and dropped after the answer. */
  timeMs: number;
  /** Longest wait for its next bytes. */
  timeoutMs: number;
  /** Most bytes read and dropped. */
  maxBytes: number;
}

/**
 * A refused request's body of at most this many bytes is read and dropped, so that its caller
 * keeps the connection (a rate-limited caller would otherwise reconnect for every 429); a larger
 * one, or one of undeclared length, is not waited for: its connection is closed after the answer.
 */
const KEPT_BODY_MAX_BYTES = 64 * 1024;
/** How long the rest of such a body may take before its connection is closed all the same. */
const KEEP_WAIT_MS = 1000;

/** The body's declared length; chunks of unknown length count as unbounded. */
function declaredBodyBytes(request: IncomingMessage): number {
  const { headers } = request;
  if (headers['transfer-encoding'] !== undefined) return Number.POSITIVE_INFINITY;
  return Number(headers['content-length'] ?? 0);
}

/**
 * Whether a request has body bytes not yet read. `complete` alone does not say: a request without
 * a body is not complete yet while its route answers in the same turn as its head arrived.
 */
function hasUnreadBody(request: IncomingMessage): boolean {
  return !request.complete && declaredBodyBytes(request) > 0;
}

/**
 * What happens to a connection whose answer was sent before its request was read whole (a 401,
 * 413, 415, 429, 503 or 400 decided from the head or part of the body, or a request the HTTP
 * parser refused): what nginx's lingering close does. Closing it at once, with the caller's bytes
 * still arriving, makes the kernel reset the connection, and a reset can destroy the answer before
 * the caller reads it (the caller sees EPIPE or ECONNRESET while it sends). So what still comes is
 * read and dropped, never handed to a reader nor counted in the in-flight budget:
 *
 * - a small body (up to 64 KiB declared) may come whole within a second, and the connection is
 *   then kept for the caller's next request;
 * - otherwise the gateway closes its side after the answer (the caller reads the answer, then the
 *   end of the connection) and goes on reading until the caller closes its side or the body ends,
 *   for at most `timeMs`, `timeoutMs` between two reads and `maxBytes` in all; then the connection
 *   is closed.
 *
 * Node's HTTP server closes a connection whose answer says `Connection: close` as soon as the
 * answer is written, so these answers say nothing of the connection (`beforeAnswer`); the
 * half-close follows them. Every error answer goes through `sendError`, which calls `beforeAnswer`:
 * no hook runs for the answers that read their bodies whole. When the gateway closes, lingering
 * connections are closed at once (their answers were sent), and the drain decides for the rest.
 */
export class LingeringConnections {
  private readonly lingering = new Map<Socket, Linger>();
  private closing = false;

  constructor(private readonly bounds: LingeringBounds) {}

  /** Serves `app`: its error answers reach this through `lingeringOf`; closing stops lingering. */
  register(app: FastifyInstance): void {
    app.decorate<LingeringConnections>('lingering', this);
    app.addHook('preClose', (done) => {
      this.closing = true;
      for (const socket of this.lingering.keys()) socket.destroy();
      done();
    });
  }

  /**
   * For an answer about to be sent. When its request's body has not been read whole, the rest is
   * read once the answer is out, and the connection is closed by lingering rather than by a
   * `Connection: close` header (which Fastify sets on a body its parser refused, and with which
   * Node would close the connection under the caller's feet). While the gateway closes, its drain
   * decides instead.
   */
  beforeAnswer(reply: FastifyReply): void {
    const request = reply.request.raw;
    // A request injected in a test has no socket to linger on.
    if (this.closing || !hasUnreadBody(request) || !(request.socket instanceof Socket)) return;
    // The header says nothing of a connection that will close: Node would keep it otherwise.
    if (
      declaredBodyBytes(request) > KEPT_BODY_MAX_BYTES ||
      reply.getHeader('connection') === 'close'
    )
      reply.removeHeader('connection');
    reply.raw.once('finish', () => {
      if (!request.complete) this.readRestOfBody(request);
    });
  }

  /**
   * After the HTTP parser refused what came on `socket` and the refusal was written: the socket
   * lingers (the parser refuses every further chunk too, each dropped here), or is closed at once
   * when its caller has nothing more to send or the answer could not be written.
   */
  afterRefusal(socket: Socket): void {
    const linger = this.lingering.get(socket);
    if (linger !== undefined) linger.sawBytes();
    else if (!socket.writable) socket.destroy();
    // The caller closed its side already: the answer is written, then the connection ends.
    else if (socket.readableEnded) socket.end();
    else this.closeGracefully(socket);
  }

  /** Whether the gateway has closed its side of `socket` and reads what still comes on it. */
  has(socket: Socket): boolean {
    return this.lingering.has(socket);
  }

  private readRestOfBody(request: IncomingMessage): void {
    const socket = request.socket;
    if (socket.destroyed) return;
    // The readers the request had (a form parser, the in-flight budget's count) take no more of it.
    request.unpipe();
    request.on('data', () => this.lingering.get(socket)?.sawBytes());
    request.resume();
    // The whole body came: nothing more is expected on a connection the gateway closed.
    request.once('end', () => {
      if (this.lingering.has(socket)) socket.destroy();
    });
    if (declaredBodyBytes(request) > KEPT_BODY_MAX_BYTES) {
      this.closeGracefully(socket);
      return;
    }
    const keep = setTimeout(() => this.closeGracefully(socket), KEEP_WAIT_MS);
    request.once('end', () => clearTimeout(keep));
    socket.once('close', () => clearTimeout(keep));
  }

  private closeGracefully(socket: Socket): void {
    if (this.lingering.has(socket) || socket.destroyed) return;
    const linger = new Linger(socket, this.bounds);
    this.lingering.set(socket, linger);
    socket.once('close', () => {
      linger.stop();
      this.lingering.delete(socket);
    });
    linger.start();
  }
}

/** One connection whose gateway side is closed, read until its caller's side closes too. */
class Linger {
  private readonly startBytes: number;
  private whole: NodeJS.Timeout | undefined;
  private idle: NodeJS.Timeout | undefined;

  constructor(
    private readonly socket: Socket,
    private readonly bounds: LingeringBounds,
  ) {
    this.startBytes = socket.bytesRead;
  }

  start(): void {
    const close = () => this.socket.destroy();
    this.socket.end();
    // The caller closed its side: everything it sent has been read.
    this.socket.once('end', close);
    this.whole = setTimeout(close, this.bounds.timeMs);
    this.idle = setTimeout(close, this.bounds.timeoutMs);
  }

  sawBytes(): void {
    if (this.socket.bytesRead - this.startBytes > this.bounds.maxBytes) this.socket.destroy();
    else this.idle?.refresh();
  }

  stop(): void {
    clearTimeout(this.whole);
    clearTimeout(this.idle);
  }
}

/** The lingering of the app that `reply` belongs to; undefined in an app built without it. */
export function lingeringOf(reply: FastifyReply): LingeringConnections | undefined {
  return reply.server.lingering;
}

declare module 'fastify' {
  interface FastifyInstance {
    lingering?: LingeringConnections;
  }
}
