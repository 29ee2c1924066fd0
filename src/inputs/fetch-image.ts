import { type Dispatcher, request } from 'undici';
import { GatewayError } from '../errors/gateway-error.js';
import { readLimited } from '../support/read-limited.js';
import { type HostCheck, resolveCheckedAddresses } from './address-guard.js';
import { imageTooLarge, invalidUrl } from './input-errors.js';
import { createPinnedAgent } from './pinned-agent.js';

export interface FetchSettings extends HostCheck {
  connectTimeoutMs: number;
  /** For the whole fetch: every DNS lookup, connection, redirect and the body. */
  totalTimeoutMs: number;
  maxBytes: number;
  maxRedirects: number;
}

type Hop = { kind: 'image'; bytes: Buffer } | { kind: 'redirect'; location: string };

const REDIRECT_STATUSES: ReadonlySet<number> = new Set([301, 302, 303, 307, 308]);

/**
 * Drops a body that will not be read. undici reports the destruction of an unread body as an
 * 'error' event, which without a listener would crash the process.
 */
function discard(body: Dispatcher.ResponseData['body']): void {
  body.on('error', () => undefined);
  body.destroy();
}

function firstHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function parseContentLength(value: string | undefined): number | undefined {
  return value !== undefined && /^[0-9]+$/.test(value) ? Number(value) : undefined;
}

/** The first URL (`from` undefined) or a redirect target, refused unless plain http(s). */
function fetchableUrl(text: string, from: URL | undefined, path: string): URL {
  const subject = from === undefined ? 'the URL' : 'the redirect target';
  let url: URL;
  try {
    url = new URL(text, from);
  } catch {
    throw invalidUrl(path, `${subject} is malformed`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw invalidUrl(
      path,
      `${subject} has scheme ${url.protocol.slice(0, -1)}; only http and https are allowed`,
    );
  }
  if (url.username !== '' || url.password !== '') {
    throw invalidUrl(path, `${subject} carries credentials, which are not allowed`);
  }
  return url;
}

/**
 * The body, refused as soon as it passes `maxBytes`. With a Content-Length (already checked
 * against the limit) the body must be exactly that long, and is read into one buffer of that
 * size, so a large image is never held twice.
 */
async function readImageBody(
  body: Dispatcher.ResponseData['body'],
  declaredLength: number | undefined,
  maxBytes: number,
  path: string,
): Promise<Buffer> {
  if (declaredLength !== undefined) {
    const read = await readLimited(body, declaredLength, { preallocate: true });
    if (read.kind === 'over-limit')
      throw invalidUrl(path, 'the server sent more bytes than its Content-Length');
    if (read.bytes.length !== declaredLength) {
      throw invalidUrl(
        path,
        `the response ended after ${read.bytes.length} of ${declaredLength} bytes`,
      );
    }
    return read.bytes;
  }
  const read = await readLimited(body, maxBytes);
  if (read.kind === 'over-limit')
    throw imageTooLarge(path, maxBytes, `the response passed ${maxBytes} bytes while streaming`);
  return read.bytes;
}

async function fetchHop(
  url: URL,
  path: string,
  settings: FetchSettings,
  signal: AbortSignal,
): Promise<Hop> {
  const addresses = await resolveCheckedAddresses(url.hostname, path, settings, signal);
  const agent = createPinnedAgent(url.hostname, addresses, settings.connectTimeoutMs);
  try {
    const response = await request(url, {
      dispatcher: agent,
      method: 'GET',
      signal,
      headers: { accept: 'image/*', 'accept-encoding': 'identity', 'user-agent': 'imagegate' },
    });
    const { statusCode, headers, body } = response;
    if (REDIRECT_STATUSES.has(statusCode)) {
      discard(body);
      const location = firstHeader(headers.location);
      if (location === undefined) {
        throw invalidUrl(path, `the server answered HTTP ${statusCode} without a Location`);
      }
      return { kind: 'redirect', location };
    }
    if (statusCode < 200 || statusCode > 299) {
      discard(body);
      throw invalidUrl(path, `the server answered HTTP ${statusCode}`);
    }
    const declaredLength = parseContentLength(firstHeader(headers['content-length']));
    if (declaredLength !== undefined && declaredLength > settings.maxBytes) {
      discard(body);
      throw imageTooLarge(
        path,
        settings.maxBytes,
        `the server declares ${declaredLength} bytes (Content-Length)`,
      );
    }
    const bytes = await readImageBody(body, declaredLength, settings.maxBytes, path);
    return { kind: 'image', bytes };
  } finally {
    await agent.destroy().catch(() => undefined);
  }
}

function errorCode(error: unknown): string | undefined {
  for (let cause = error; cause instanceof Error; cause = cause.cause) {
    if ('code' in cause && typeof cause.code === 'string') return cause.code;
  }
  return undefined;
}

function describeFailure(error: unknown, settings: FetchSettings): string {
  const code = errorCode(error);
  if (code === 'UND_ERR_CONNECT_TIMEOUT') {
    return `could not connect within ${settings.connectTimeoutMs} ms`;
  }
  return `could not fetch the image (${code ?? 'network error'})`;
}

/**
 * Fetches an image URL behind the address guard: every hop's host is resolved and checked
 * first and the connection goes to the checked address; redirects are followed by hand, at most
 * `maxRedirects`, each one checked again. Throws InvalidURL or InvalidImage naming `path`, or
 * the reason of `signal` when the caller gave up.
 */
export async function fetchImage(
  url: string,
  path: string,
  settings: FetchSettings,
  signal: AbortSignal,
): Promise<Buffer> {
  signal.throwIfAborted();
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), settings.totalTimeoutMs);
  const fetchSignal = AbortSignal.any([signal, deadline.signal]);
  try {
    let current = fetchableUrl(url, undefined, path);
    for (let redirectsFollowed = 0; ; redirectsFollowed++) {
      const hop = await fetchHop(current, path, settings, fetchSignal);
      if (hop.kind === 'image') return hop.bytes;
      if (redirectsFollowed === settings.maxRedirects) {
        throw invalidUrl(path, `more than ${settings.maxRedirects} redirects`);
      }
      current = fetchableUrl(hop.location, current, path);
    }
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    if (error instanceof GatewayError) throw error;
    if (deadline.signal.aborted) {
      throw invalidUrl(path, `no complete response within ${settings.totalTimeoutMs} ms`);
    }
    throw invalidUrl(path, describeFailure(error, settings));
  } finally {
    clearTimeout(timer);
  }
}
