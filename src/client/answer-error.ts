/**
 * A refusal the gateway answered (docs/api.md §7.1, or the OpenAI door's error shape): its code,
 * message and request id as the gateway gave them. Codes stay strings: a newer gateway may
 * answer one this client does not know.
 */
export class GatewayAnswerError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly requestId: string | undefined,
    readonly status: number,
  ) {
    super(message);
    this.name = 'GatewayAnswerError';
  }
}

/** The gateway could not be reached, or answered something that is not the protocol. */
export class GatewayTransportError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GatewayTransportError';
  }
}

interface DashScopeErrorBody {
  code?: unknown;
  message?: unknown;
  request_id?: unknown;
  error?: { code?: unknown; message?: unknown };
}

/** The error an answer with a failing status carries, from either door's error body. */
export async function answerErrorOf(response: Response): Promise<GatewayAnswerError> {
  const text = await response.text();
  const headerId = response.headers.get('x-request-id') ?? undefined;
  let body: DashScopeErrorBody = {};
  try {
    body = JSON.parse(text) as DashScopeErrorBody;
  } catch {
    // Not JSON (a proxy's page): the status and the text say what happened.
  }
  return errorFromBody(body, response.status, headerId, text);
}

/** The error of a DashScope error body or an OpenAI `{error: {...}}` body. */
export function errorFromBody(
  body: DashScopeErrorBody,
  status: number,
  headerId: string | undefined,
  fallbackText = '',
): GatewayAnswerError {
  const source = body.error ?? body;
  const code = typeof source.code === 'string' ? source.code : `HTTP ${status}`;
  const message =
    typeof source.message === 'string'
      ? source.message
      : fallbackText.slice(0, 200) || 'no message';
  const requestId = typeof body.request_id === 'string' ? body.request_id : headerId;
  return new GatewayAnswerError(code, message, requestId, status);
}
