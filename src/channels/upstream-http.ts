import { Agent } from 'undici';
import type { Cancellation } from '../support/cancellation.js';
import { DownloadAnswer } from './download-answer.js';
import type {
  HttpDownload,
  HttpOutcome,
  HttpRequest,
  ResponseHeaders,
} from './upstream-exchange.js';
import { type DispatchTarget, WholeAnswer } from './whole-answer.js';

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

  /** One exchange whose answer is read whole, through undici's `dispatch` (see WholeAnswer). */
  send(outgoing: HttpRequest): Promise<HttpOutcome> {
    return new Promise((resolve) => {
      new WholeAnswer(outgoing, resolve).start(this.agent, this.targetOf);
    });
  }

  private readonly targets = new DispatchTargets();
  private readonly targetOf = (url: string) => this.targets.of(url);

  /**
   * A GET of an image. An answer that declares a length of at most `wholeMaxBytes` is read whole,
   * as `send` reads one; any other comes as a stream, which the caller must consume or destroy.
   * The signal ends either, a stream by destroying it with the signal's reason.
   */
  download(url: string, signal: Cancellation, wholeMaxBytes: number): Promise<HttpDownload> {
    return new Promise((resolve) => {
      new DownloadAnswer(url, signal, wholeMaxBytes, resolve).start(this.agent);
    });
  }

  private drainStarted = false;

  /** True once the gateway drains: from then on a caller who leaves stops its upstream call. */
  get draining(): boolean {
    return this.drainStarted;
  }

  drain(): void {
    this.drainStarted = true;
  }

  close(): Promise<void> {
    return this.agent.close();
  }
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
