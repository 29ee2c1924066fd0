import { type ErrorCode, statusOf } from './error-table.js';
import { echo } from './echo.js';

/** An error meant for the caller: its code comes from the error table, its message is safe to show. */
export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;

  constructor(code: ErrorCode, message: string, headers: Record<string, string> = {}) {
    super(message);
    this.name = 'GatewayError';
    this.code = code;
    this.status = statusOf(code);
    this.headers = headers;
  }
}

export function invalidParameter(path: string, problem: string): GatewayError {
  return new GatewayError('InvalidParameter', path === '' ? problem : `${echo(path)}: ${problem}`);
}

export interface ErrorBody {
  code: ErrorCode;
  message: string;
  request_id: string;
}

export function errorBody(error: GatewayError, requestId: string): ErrorBody {
  return { code: error.code, message: error.message, request_id: requestId };
}
