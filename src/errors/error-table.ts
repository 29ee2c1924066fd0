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

export function statusOf(code: ErrorCode): number {
  return ERROR_TABLE[code].status;
}
