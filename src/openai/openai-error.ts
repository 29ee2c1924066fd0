import type { ErrorCode } from '../errors/error-table.js';
import { GatewayError } from '../errors/gateway-error.js';

/** A refusal on an OpenAI route that names the request field at fault (OpenAI's `param`). */
export class OpenAiFieldError extends GatewayError {
  constructor(
    code: ErrorCode,
    message: string,
    readonly param: string,
    headers: Record<string, string> = {},
  ) {
    super(code, message, headers);
  }
}

export interface OpenAiErrorBody {
  error: { message: string; type: string; param: string | null; code: ErrorCode };
}

/** OpenAI's error `type` for our status: the SDKs pick their error class from the status alone. */
function typeOf(error: GatewayError): string {
  if (error.code === 'Throttling.AllocationQuota') return 'insufficient_quota';
  switch (error.status) {
    case 401:
      return 'authentication_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 429:
      return 'rate_limit_error';
    default:
      return error.status >= 500 ? 'server_error' : 'invalid_request_error';
  }
}

/** docs/openai.md: the error body of the OpenAI routes, with our code in `error.code`. */
export function openAiErrorBody(error: GatewayError): OpenAiErrorBody {
  return {
    error: {
      message: error.message,
      type: typeOf(error),
      param: error instanceof OpenAiFieldError ? error.param : null,
      code: error.code,
    },
  };
}

/**
 * Headers an OpenAI SDK reads on an error: a quota that cannot cover the request will not cover
 * it a moment later, so the SDKs are told not to retry it (they retry every other 429).
 */
export function openAiErrorHeaders(error: GatewayError): Record<string, string> {
  return error.code === 'Throttling.AllocationQuota' ? { 'x-should-retry': 'false' } : {};
}
