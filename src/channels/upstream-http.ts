import { Readable } from 'node:stream';
import { Agent, type Dispatcher, util } from 'undici';
import type { Cancellation } from '../support/cancellation.js';
import type { StreamedBody } from './streamed-json.js';

export type ResponseHeaders = Record<string, string | string[] | undefined>;

export interface HttpRequest {
  method: 'GET' | 'POST';
  url: string;
  headers: Record<string, string>;
  /** Sent with a Content-Length; a StreamedBody is made a chunk at a time as the socket takes it. */
  body?: Buffer | StreamedBody;
  signal: Cancellation;
  /** Larger answers are cut off and reported as a failure. */
  maxResponseBytes: number;
}

export type HttpOutcome =
  { kind: 'response'; status: number; headers: ResponseHeaders; body: Buffer } | HttpFailure;

/** A download: read whole when it declared a small enough length, else a stream to consume. */
export type HttpDownload =
  | { kind: 'response'; status: number; headers: ResponseHeaders; body: Buffer }
  | { kind: 'stream'; status: number; headers: ResponseHeaders; body: Readable }
  | HttpFailure;

export interface HttpFailure {
  kind: 'failed';
  /**
   * Whether the whole request had been handed to the connection when it failed: from then on the
   * upstream may have received and accepted it.
   */
  requestSent: boolean;
  /** The request's signal fired (caller gone or time up); the caller knows which. */
  aborted: boolean;
  detail: string;
}

const CONNECT_TIMEOUT_MS = 10_000;

/**
 * Upstream HTTP over one undici connection pool, shared by every channel set so that a config
 * reload never closes connections under requests still in flight. Time-outs come from the
 * caller's signal, not from undici's own timers.
 */
export class UpstreamHttp {
  private readonly agent = new Agent({
    connect: { timeout: CONNECT_TIMEOUT_MS },
    headersTimeout: 0,
    bodyTimeout: 0,
    keepAliveTimeout: 4_000,
  });

  /**
   * One exchange whose answer is read whole, through undici's `dispatch` rather than `request`:
   * the answer's chunks are collected as they arrive, with no stream, async iterator or
   * abort-signal wrapper in between (these were a tenth of the gateway's CPU per request).
   */
  send(outgoing: HttpRequest): Promise<HttpOutcome> {
    return new Promise((resolve) => {
      new WholeAnswer(this.agent, outgoing, this.targets, resolve).start();
    });
  }

  private readonly targets = new DispatchTargets();

  /**
   * A GET of an image. An answer that declares a length of at most `wholeMaxBytes` is read whole,
   * as `send` reads one; any other comes as a stream, which the caller must consume or destroy.
   * The signal ends either, a stream by destroying it with the signal's reason.
   */
  download(url: string, signal: Cancellation, wholeMaxBytes: number): Promise<HttpDownload> {
    return new Promise((resolve) => {
      new DownloadAnswer(this.agent, url, signal, wholeMaxBytes, resolve).start();
    });
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

/** Where undici sends a URL: its origin, and its path with the query. */
interface DispatchTarget {
  origin: string;
  path: string;
}

/**
 * URLs split for `dispatch`, by their text. A channel sends every call to the same URL, and
 * parsing it anew each time showed in profiles. Polls of tasks have URLs of their own: past
 * `MAX_TARGETS` the memory starts afresh rather than grow.
 */
class DispatchTargets {
  private readonly targets = new Map<string, DispatchTarget>();

  of(text: string): DispatchTarget {
    let target = this.targets.get(text);
    if (target === undefined) {
      const url = new URL(text);
      target = { origin: url.origin, path: `${url.pathname}${url.search}` };
      if (this.targets.size >= MAX_TARGETS) this.targets.clear();
      this.targets.set(text, target);
    }
    return target;
  }
}

const MAX_TARGETS = 256;

/** Collects one answer for `send`, and settles it exactly once. */
class WholeAnswer implements Dispatcher.DispatchHandler {
  private abort: ((reason?: Error) => void) | undefined;
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
    this.abort?.(reason);
  };

  constructor(
    private readonly agent: Agent,
    private readonly outgoing: HttpRequest,
    private readonly targets: DispatchTargets,
    private readonly resolve: (outcome: HttpOutcome) => void,
  ) {
    this.requestSent = outgoing.body === undefined;
  }

  start(): void {
    const { signal } = this.outgoing;
    if (signal.aborted) return this.fail(abortReason(signal));
    signal.addEventListener('abort', this.onAbort);
    const body = this.outgoing.body;
    try {
      const { origin, path } = this.targets.of(this.outgoing.url);
      this.agent.dispatch(
        {
          origin,
          path,
          method: this.outgoing.method,
          headers:
            body === undefined
              ? this.outgoing.headers
              : withContentLength(this.outgoing.headers, bodyLength(body)),
          // Dispatcher.dispatch documents iterable bodies; its typings omit them.
          body: (body === undefined
            ? null
            : Buffer.isBuffer(body)
              ? body
              : body.chunks()) as Dispatcher.DispatchOptions['body'],
        },
        this,
      );
    } catch (error) {
      this.fail(error);
    }
  }

  onConnect(abort: (reason?: Error) => void): void {
    this.abort = abort;
    if (this.settled) abort(new Error('already settled'));
  }

  onRequestSent(): void {
    this.requestSent = true;
  }

  onHeaders(status: number, rawHeaders: Buffer[]): boolean {
    this.status = status;
    this.headers = util.parseHeaders(rawHeaders) as ResponseHeaders;
    return true;
  }

  onData(chunk: Buffer): boolean {
    this.received += chunk.length;
    if (this.received > this.outgoing.maxResponseBytes) {
      this.settle({
        kind: 'failed',
        requestSent: true,
        aborted: false,
        detail: `answer larger than ${this.outgoing.maxResponseBytes} bytes`,
      });
      this.abort?.(new Error('answer over the limit'));
      return false;
    }
    this.chunks.push(chunk);
    return true;
  }

  onComplete(): void {
    this.settle(wholeResponse(this.status, this.headers, this.chunks));
  }

  onError(error: Error): void {
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

/** Collects one download for `download`, or hands it over as a stream once it is too long. */
class DownloadAnswer implements Dispatcher.DispatchHandler {
  private abort: ((reason?: Error) => void) | undefined;
  private status = 0;
  private headers: ResponseHeaders = {};
  private resume: (() => void) | undefined;
  private chunks: Buffer[] = [];
  private received = 0;
  private stream: Readable | undefined;
  private ended = false;
  private settled = false;
  private readonly onAbort = () => {
    const reason = abortReason(this.signal);
    this.fail(reason);
    this.stream?.destroy(reason);
    this.abort?.(reason);
  };

  constructor(
    private readonly agent: Agent,
    private readonly url: string,
    private readonly signal: Cancellation,
    private readonly wholeMaxBytes: number,
    private readonly resolve: (outcome: HttpDownload) => void,
  ) {}

  start(): void {
    if (this.signal.aborted) return this.fail(abortReason(this.signal));
    this.signal.addEventListener('abort', this.onAbort);
    try {
      const url = new URL(this.url);
      this.agent.dispatch(
        {
          origin: url.origin,
          path: `${url.pathname}${url.search}`,
          method: 'GET',
          headers: { accept: 'image/png,image/*;q=0.8' },
        },
        this,
      );
    } catch (error) {
      this.fail(error);
    }
  }

  onConnect(abort: (reason?: Error) => void): void {
    this.abort = abort;
    if (this.settled && this.stream === undefined) abort(new Error('already settled'));
  }

  onHeaders(status: number, rawHeaders: Buffer[], resume: () => void): boolean {
    const headers = util.parseHeaders(rawHeaders) as ResponseHeaders;
    const declared = Number(headers['content-length']);
    if (Number.isSafeInteger(declared) && declared <= this.wholeMaxBytes) {
      this.status = status;
      this.headers = headers;
      return true;
    }
    this.resume = resume;
    const stream = new Readable({
      read: () => this.resume?.(),
      destroy: (error, callback) => {
        // Destroyed by its reader before its end: nobody wants the rest.
        if (!this.ended) this.abort?.(error ?? new Error('download abandoned'));
        this.signal.removeEventListener('abort', this.onAbort);
        callback(error);
      },
    });
    this.stream = stream;
    this.settle({ kind: 'stream', status, headers, body: stream }, false);
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.stream !== undefined) return this.stream.push(chunk);
    this.received += chunk.length;
    if (this.received > this.wholeMaxBytes) {
      this.fail(new Error(`image longer than its Content-Length`));
      this.abort?.(new Error('answer over its declared length'));
      return false;
    }
    this.chunks.push(chunk);
    return true;
  }

  onComplete(): void {
    this.ended = true;
    if (this.stream !== undefined) {
      this.stream.push(null);
      this.signal.removeEventListener('abort', this.onAbort);
      return;
    }
    this.settle(wholeResponse(this.status, this.headers, this.chunks));
  }

  onError(error: Error): void {
    this.ended = true;
    if (this.stream !== undefined) this.stream.destroy(error);
    else this.fail(error);
  }

  private fail(error: unknown): void {
    this.settle(describeFailure(error, true, this.signal));
  }

  /** `stopListening`: false while a handed-over stream still follows the signal. */
  private settle(outcome: HttpDownload, stopListening = true): void {
    if (this.settled) return;
    this.settled = true;
    if (stopListening) this.signal.removeEventListener('abort', this.onAbort);
    this.resolve(outcome);
  }
}

/** An answer read whole: its chunks as one Buffer, copied only when there are several. */
function wholeResponse(
  status: number,
  headers: ResponseHeaders,
  chunks: Buffer[],
): { kind: 'response'; status: number; headers: ResponseHeaders; body: Buffer } {
  const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
  return { kind: 'response', status, headers, body };
}

function withContentLength(headers: Record<string, string>, length: number) {
  return Object.assign({}, headers, { 'content-length': String(length) });
}

function bodyLength(body: Buffer | StreamedBody): number {
  return Buffer.isBuffer(body) ? body.length : body.byteLength;
}

function abortReason(signal: Cancellation): Error {
  return signal.reason instanceof Error ? signal.reason : new Error('aborted');
}

const DESCRIPTIONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  UND_ERR_CONNECT_TIMEOUT: 'connect timed out',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection closed',
  UND_ERR_SOCKET: 'connection closed by the upstream',
  UND_ERR_CLOSED: 'connection pool closed',
};

function describeFailure(error: unknown, requestSent: boolean, signal: Cancellation): HttpFailure {
  if (signal.aborted) return { kind: 'failed', requestSent, aborted: true, detail: 'aborted' };
  const code = errorCode(error);
  const known = code === undefined ? undefined : DESCRIPTIONS[code];
  const detail = known ?? (error instanceof Error ? error.message.slice(0, 200) : 'request failed');
  return { kind: 'failed', requestSent, aborted: false, detail };
}

function errorCode(error: unknown): string | undefined {
  let current: unknown = error;
  // undici wraps system errors (`cause`); the innermost code is the informative one.
  for (let depth = 0; depth < 4 && current instanceof Error; depth += 1) {
    const code = (current as Error & { code?: unknown }).code;
    const cause: unknown = current.cause;
    if (typeof code === 'string' && !(cause instanceof Error && 'code' in cause)) return code;
    current = cause;
  }
  return undefined;
}

/** The Retry-After header in milliseconds, when it is a number of seconds or an HTTP date. */
export function retryAfterMs(
  headers: ResponseHeaders,
  now: number = Date.now(),
): number | undefined {
  const raw = headers['retry-after'];
  const value = Array.isArray(raw) ? raw[0] : raw;
  if (value === undefined || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
