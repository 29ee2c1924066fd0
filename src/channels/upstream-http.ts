import type { Readable } from 'node:stream';
import { Agent, request } from 'undici';
import { readLimited } from '../support/read-limited.js';
import type { StreamedBody } from './streamed-json.js';

export type ResponseHeaders = Record<string, string | string[] | undefined>;

export interface HttpRequest {
  method: 'GET' | 'POST';
  url: string;
  headers: Record<string, string>;
  /** Sent with a Content-Length; a StreamedBody is made a chunk at a time as the socket takes it. */
  body?: Buffer | StreamedBody;
  signal: AbortSignal;
  /** Larger answers are cut off and reported as a failure. */
  maxResponseBytes: number;
}

export type HttpOutcome =
  { kind: 'response'; status: number; headers: ResponseHeaders; body: Buffer } | HttpFailure;

export type HttpStream =
  { kind: 'response'; status: number; headers: ResponseHeaders; body: Readable } | HttpFailure;

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

  async send(outgoing: HttpRequest): Promise<HttpOutcome> {
    const tracked = trackSending(outgoing);
    try {
      const response = await request(outgoing.url, {
        method: outgoing.method,
        headers: tracked.headers,
        // Dispatcher.dispatch documents AsyncIterable bodies; request()'s typings omit them.
        body: tracked.body as Readable | undefined,
        signal: outgoing.signal,
        dispatcher: this.agent,
      });
      const read = await readLimited(response.body, outgoing.maxResponseBytes);
      if (read.kind === 'over-limit')
        return {
          kind: 'failed',
          requestSent: true,
          aborted: false,
          detail: `answer larger than ${outgoing.maxResponseBytes} bytes`,
        };
      return {
        kind: 'response',
        status: response.statusCode,
        headers: response.headers,
        body: read.bytes,
      };
    } catch (error) {
      return describeFailure(error, tracked.sent(), outgoing.signal);
    }
  }

  /** A GET whose body the caller streams; the caller must consume or destroy it. */
  async stream(url: string, signal: AbortSignal): Promise<HttpStream> {
    try {
      const response = await request(url, {
        method: 'GET',
        signal,
        dispatcher: this.agent,
        headers: { accept: 'image/png,image/*;q=0.8' },
      });
      return {
        kind: 'response',
        status: response.statusCode,
        headers: response.headers,
        body: response.body,
      };
    } catch (error) {
      return describeFailure(error, true, signal);
    }
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

/**
 * A POST body goes out through a generator, so we learn when its last byte has been handed to
 * the socket: undici pulls the next chunk only after writing the previous one. Until then a
 * failure cannot have reached an upstream that could act on the request.
 */
function trackSending(outgoing: HttpRequest): {
  headers: Record<string, string>;
  body: AsyncIterable<Buffer> | undefined;
  sent: () => boolean;
} {
  const payload = outgoing.body;
  if (payload === undefined)
    return { headers: outgoing.headers, body: undefined, sent: () => true };
  const streamed: StreamedBody = Buffer.isBuffer(payload)
    ? { byteLength: payload.length, chunks: () => [payload] }
    : payload;
  let sent = false;
  async function* chunks(): AsyncGenerator<Buffer> {
    for (const chunk of streamed.chunks()) yield chunk;
    sent = true;
  }
  return {
    headers: { ...outgoing.headers, 'content-length': String(streamed.byteLength) },
    body: chunks(),
    sent: () => sent,
  };
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

function describeFailure(error: unknown, requestSent: boolean, signal: AbortSignal): HttpFailure {
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
