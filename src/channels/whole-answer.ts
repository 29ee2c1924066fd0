import type { Agent, Dispatcher } from 'undici';
import { describeFailure } from './http-failure.js';
import type { StreamedBody } from './streamed-json.js';
import {
  abortReason,
  type HttpOutcome,
  type HttpRequest,
  type ResponseHeaders,
  wholeResponse,
} from './upstream-exchange.js';

/** Where undici sends a URL: its origin, and its path with the query. */
export interface DispatchTarget {
  origin: string;
  path: string;
}

/**
 * One exchange whose answer is read whole, on undici's handler API: the answer's chunks are
 * collected as they arrive, with no stream, async iterator or abort-signal wrapper in between
 * (these were a tenth of the gateway's CPU per request). Settles exactly once.
 *
 * The handler API says when the answer starts, not when the request has been written, so the
 * body says it: undici pulls it a chunk at a time as the socket takes it, and asks for more after
 * the last chunk only once the socket has taken that one. From then on the upstream may have
 * accepted the request.
 */
export class WholeAnswer implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | undefined;
  private requestSent: boolean;
  private status = 0;
  private headers: ResponseHeaders = {};
  private readonly chunks: Buffer[] = [];
  private received = 0;
  private settled = false;
  /** Answered at once: whatever the connection does next, nobody waits for it any more. */
  private readonly onAbort = () => {
    const reason = abortReason(this.outgoing.signal);
    this.fail(reason);
    this.controller?.abort(reason);
  };

  constructor(
    private readonly outgoing: HttpRequest,
    private readonly resolve: (outcome: HttpOutcome) => void,
  ) {
    // A request without a body is written whole with its head.
    this.requestSent = outgoing.body === undefined;
  }

  /** `targetOf`: where undici sends the request's URL; it throws for a URL it cannot read. */
  start(agent: Agent, targetOf: (url: string) => DispatchTarget): void {
    const { signal, body } = this.outgoing;
    if (signal.aborted) return this.fail(abortReason(signal));
    signal.addEventListener('abort', this.onAbort);
    try {
      const target = targetOf(this.outgoing.url);
      agent.dispatch(
        {
          origin: target.origin,
          path: target.path,
          method: this.outgoing.method,
          headers:
            body === undefined
              ? this.outgoing.headers
              : withContentLength(this.outgoing.headers, bodyLength(body)),
          // Dispatcher.dispatch documents iterable bodies; its typings omit them.
          body: (body === undefined
            ? null
            : handedOver(body, this.sent)) as Dispatcher.DispatchOptions['body'],
        },
        this,
      );
    } catch (error) {
      this.fail(error);
    }
  }

  private readonly sent = () => {
    this.requestSent = true;
  };

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.settled) controller.abort(new Error('already settled'));
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    status: number,
    headers: object,
  ): void {
    this.status = status;
    this.headers = headers as ResponseHeaders;
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.received += chunk.length;
    if (this.received > this.outgoing.maxResponseBytes) {
      this.settle({
        kind: 'failed',
        requestSent: true,
        aborted: false,
        detail: `answer larger than ${this.outgoing.maxResponseBytes} bytes`,
      });
      controller.abort(new Error('answer over the limit'));
      return;
    }
    this.chunks.push(chunk);
  }

  onResponseEnd(): void {
    this.settle(wholeResponse(this.status, this.headers, this.chunks));
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.fail(error);
  }

  private fail(error: unknown): void {
    this.settle(describeFailure(error, this.requestSent, this.outgoing.signal));
  }

  private settle(outcome: HttpOutcome): void {
    if (this.settled) return;
    this.settled = true;
    this.outgoing.signal.removeEventListener('abort', this.onAbort);
    this.resolve(outcome);
  }
}

/**
 * The body as undici takes it, a chunk at a time; `sent` is told when undici asks for more after
 * the last chunk, the socket having taken every byte. Not told when the body is abandoned.
 */
function* handedOver(body: Buffer | StreamedBody, sent: () => void): Generator<Buffer> {
  if (Buffer.isBuffer(body)) yield body;
  else yield* body.chunks();
  sent();
}

function withContentLength(headers: Record<string, string>, length: number) {
  return Object.assign({}, headers, { 'content-length': String(length) });
}

function bodyLength(body: Buffer | StreamedBody): number {
  return Buffer.isBuffer(body) ? body.length : body.byteLength;
}
