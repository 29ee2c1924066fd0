/**
 * Every error the gateway answers with. docs/errors.md documents this table and a test keeps the
 * two in step, so a code cannot be added or changed here without the docs following.
 */
export const ERROR_TABLE = {
  InvalidParameter: { status: 400 },
  InvalidURL: { status: 400 },
  InvalidImage: { status: 400 },
  DataInspectionFailed: { status: 400 },
  UnsupportedOperation: { status: 400 },
  InvalidApiKey: { status: 401 },
  NotFound: { status: 404 },
  MethodNotAllowed: { status: 405 },
  RequestTimeout: { status: 408 },
  RequestTooLarge: { status: 413 },
  UnsupportedMediaType: { status: 415 },
  RequestHeaderFieldsTooLarge: { status: 431 },
  'Throttling.RateQuota': { status: 429 },
  'Throttling.AllocationQuota': { status: 429 },
  InternalError: { status: 500 },
  UpstreamError: { status: 502 },
  ModelUnavailable: { status: 503 },
  NoAvailableChannel: { status: 503 },
  Overloaded: { status: 503 },
} as const satisfies Record<string, { status: number }>;

export type ErrorCode = keyof typeof ERROR_TABLE;

/**
 * Codes no answer carries, which ledger rows, the request log and the metrics record: why a
 * request ended without an answer of the table above, or billed nothing though it produced
 * (docs/admission.md). Each with the status its ledger row records.
 */
export const LEDGER_CODES = {
  /** The caller left before the answer was handed over (nginx's 499). */
  CallerGone: { status: 499 },
  /** A task was canceled before it ran. */
  Canceled: { status: 499 },
  /** The request's reservation or claim lapsed while it was held up: nothing billed. */
  LeaseLost: { status: 503 },
  /** A base64 answer was handed over whole and its bill then failed: delivered, billed nothing. */
  DeliveredUnbilled: { status: 200 },
  /** A stand-in row: the request is still running, or was lost with its node; nobody answered. */
  Abandoned: { status: 0 },
} as const satisfies Record<string, { status: number }>;

export type LedgerCode = keyof typeof LEDGER_CODES;

/** The code a ledger row or the request log records: an answered error's, or a ledger-only one. */
export type RecordedCode = ErrorCode | LedgerCode;

export function statusOf(code: ErrorCode): number {
  return ERROR_TABLE[code].status;
}
