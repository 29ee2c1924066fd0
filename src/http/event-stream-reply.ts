import { PassThrough } from 'node:stream';
import type { FastifyReply } from 'fastify';
import type { IncomingHttpHeaders } from 'node:http';
import type { GenerationRequest } from '../domain/generation-request.js';
import { CallerGone } from '../errors/caller-gone.js';
import type { StreamEventData } from '../generation/stream-events.js';
import type { LevelGauge } from '../metrics/level-gauge.js';
import { handedOver, stillOpen } from './connection-handover.js';
import { answeredWithError, gatewayErrorOf } from './error-reply.js';
import { errorEvent, EVENT_STREAM_TYPE, KEEP_ALIVE_COMMENT, resultEvent } from './sse-framing.js';

/** Proxies commonly cut a connection idle for 30-60 s; a comment twice as often keeps it open. */
export const KEEP_ALIVE_MS = 15_000;

/** Whether the caller asked for Server-Sent Events: by header, as the SDK does, or by parameter. */
export function wantsEventStream(
  headers: IncomingHttpHeaders,
  request: GenerationRequest,
): boolean {
  if (request.answer.stream) return true;
  if (headers['x-dashscope-sse']?.toString().trim().toLowerCase() === 'enable') return true;
  return headers.accept !== undefined && namesEventStream(headers.accept);
}

/**
 * Whether an Accept header lists `text/event-stream` itself (media types are case-insensitive)
 * with a weight above zero. A wildcard range does not count: browsers send one with every request.
 */
function namesEventStream(accept: string): boolean {
  for (const range of accept.split(',')) {
    const [type = '', ...parameters] = range.split(';');
    if (type.trim().toLowerCase() !== 'text/event-stream') continue;
    const weight = parameters
      .map((parameter) => parameter.trim().toLowerCase())
      .find((parameter) => parameter.startsWith('q='));
    if (weight === undefined || Number(weight.slice(2)) > 0) return true;
  }
  return false;
}

/**
 * A generation answered as an event stream. The stream starts (status 200, headers sent) at its
 * first write: the first keep-alive comment, an incremental stream's first image, or the events
 * once the result is settled. Until then
 * a failure is still answered as the JSON error it would be without streaming; after, it is an
 * error event that ends the stream.
 */
export class EventStreamReply {
  private body: PassThrough | undefined;
  private readonly keepAlive: NodeJS.Timeout;
  private nextId = 1;

  constructor(
    private readonly reply: FastifyReply,
    keepAliveMs: number,
    /** Streams started and not yet closed, moved up at the start and down at the close. */
    private readonly openStreams: LevelGauge | undefined,
  ) {
    this.keepAlive = setInterval(() => this.write(KEEP_ALIVE_COMMENT), keepAliveMs);
  }

  get started(): boolean {
    return this.body !== undefined;
  }

  /** Sends one result event at once and keeps the stream open (a replayed incremental image). */
  send(event: StreamEventData): void {
    this.write(resultEvent(this.nextId++, event));
  }

  /**
   * Sends one result event (an incremental stream's image) and resolves whether it reached the
   * caller's connection (connection-handover.ts): false when the caller was gone before or while
   * it was written, and then it was not handed over.
   */
  async handOver(event: StreamEventData): Promise<boolean> {
    const response = this.reply.raw;
    let reached = await stillOpen(response);
    if (reached) {
      const body = this.body ?? this.start();
      body.write(resultEvent(this.nextId++, event));
      reached = await handedOver(response, body);
    }
    // A caller who only half-closed leaves the answer open on this side: it is over, for everyone.
    if (!reached) response.destroy();
    return reached;
  }

  /** Sends the last result events and ends the stream. */
  finish(events: readonly StreamEventData[]): FastifyReply {
    this.write(events.map((data) => resultEvent(this.nextId++, data)).join(''));
    return this.end();
  }

  /**
   * Ends a started stream after a failure: with an error event, unless the caller is gone (then
   * there is nobody to tell, and the ledger row says 499). The row records the error's status, as
   * if it had been answered on its own, though the stream's head said 200.
   */
  fail(error: unknown): FastifyReply {
    const callerGone = error instanceof CallerGone || this.reply.raw.destroyed;
    if (!callerGone) {
      const known = gatewayErrorOf(error, this.reply.request);
      answeredWithError(this.reply.request, known);
      this.write(errorEvent(this.nextId++, known, this.reply.request.id));
    }
    return this.end();
  }

  /** Stops the keep-alive; always called once the generation is over, however it ended. */
  stopKeepAlive(): void {
    clearInterval(this.keepAlive);
  }

  private write(chunk: string): void {
    const body = this.body ?? this.start();
    if (!body.destroyed) body.write(chunk);
  }

  private end(): FastifyReply {
    this.stopKeepAlive();
    // Not ended into a destroyed answer: its response would count as finished though it never
    // finishes, and a close seen after that would not be taken for the caller's leaving.
    if (this.reply.raw.destroyed) this.body?.destroy();
    else this.body?.end();
    return this.reply;
  }

  private start(): PassThrough {
    const body = new PassThrough();
    this.body = body;
    this.countWhileOpen();
    void this.reply
      .code(200)
      .type(EVENT_STREAM_TYPE)
      .header('cache-control', 'no-cache')
      .header('x-accel-buffering', 'no')
      .send(body);
    return body;
  }

  /** The answer's close, however it comes (ended, caller gone, timed out), happens once. */
  private countWhileOpen(): void {
    const openStreams = this.openStreams;
    const response = this.reply.raw;
    if (openStreams === undefined || response.closed) return;
    openStreams.inc();
    response.once('close', () => openStreams.dec());
  }
}
