import { storedToken } from './session';

/** The gateway's error shape, `{code, message, request_id}`, with the HTTP status. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly requestId: string | undefined,
    /** Seconds to wait before asking again, from a refusal's `Retry-After`. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

export function authorization(token = storedToken()): Record<string, string> {
  return token === undefined ? {} : { authorization: `Bearer ${token}` };
}

/** An answer that is not 2xx, as an ApiError carrying what the gateway said. */
export async function errorOf(response: Response): Promise<ApiError> {
  const text = await response.text();
  const retryAfter = Number(response.headers.get('retry-after') ?? Number.NaN);
  try {
    const body = JSON.parse(text) as { code?: string; message?: string; request_id?: string };
    return new ApiError(
      response.status,
      body.code ?? `HTTP ${response.status}`,
      body.message ?? text,
      body.request_id,
      Number.isFinite(retryAfter) ? retryAfter : undefined,
    );
  } catch {
    return new ApiError(response.status, `HTTP ${response.status}`, text.slice(0, 300), undefined);
  }
}

/** A JSON request to the gateway with the signed-in token; throws ApiError on a refusal. */
export async function api<T>(
  path: string,
  init: { method?: string; body?: unknown; headers?: Record<string, string>; token?: string } = {},
): Promise<T> {
  const headers: Record<string, string> = { ...authorization(init.token), ...init.headers };
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(path, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  if (!response.ok) throw await errorOf(response);
  return (await response.json()) as T;
}

export function messageOf(error: unknown): string {
  if (error instanceof ApiError) return `${error.code}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}
