import type { Cancellation } from '../support/cancellation.js';
import type { HttpFailure } from './upstream-exchange.js';

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

/** A failed exchange for people and for failover: what broke, and whether the request was sent. */
export function describeFailure(
  error: unknown,
  requestSent: boolean,
  signal: Cancellation,
): HttpFailure {
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
