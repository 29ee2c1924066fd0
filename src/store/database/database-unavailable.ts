/**
 * PostgreSQL error classes that mean "the database cannot serve now" rather than "this query is
 * wrong": connection exceptions, the server shutting down or starting, time-outs and lock waits
 * we bounded ourselves. See PostgreSQL's appendix "Error Codes".
 */
const UNAVAILABLE_SQLSTATE_PREFIXES = ['08', '53', '57P'];
const UNAVAILABLE_SQLSTATES = new Set([
  '57014', // query_canceled: our statement_timeout
  '55P03', // lock_not_available: our lock_timeout
  '25P03', // idle_in_transaction_session_timeout
  '40001', // serialization_failure
  '40P01', // deadlock_detected
]);
const UNAVAILABLE_NODE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'SQLITE_BUSY',
  'SQLITE_LOCKED',
]);
/** node-postgres reports these without a code. */
const UNAVAILABLE_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Query read timeout',
  'Client has encountered a connection error',
  'Client was closed and is not queryable',
  'Cannot use a pool after calling end on the pool',
];

/** Whether `error` says the database is unreachable, restarting, frozen or overloaded. */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (UNAVAILABLE_SQLSTATES.has(code) || UNAVAILABLE_NODE_CODES.has(code)) return true;
    if (/^[0-9A-Z]{5}$/.test(code))
      return UNAVAILABLE_SQLSTATE_PREFIXES.some((prefix) => code.startsWith(prefix));
  }
  return UNAVAILABLE_MESSAGES.some((message) => error.message.includes(message));
}

/**
 * How long callers refused for an unavailable database are asked to wait: an outage is usually a
 * restart or a fail-over, seconds rather than minutes.
 */
export const DATABASE_RETRY_AFTER_S = 2;
