import { GATEWAY_PATHS } from './gateway-paths.js';
import { answerErrorOf, GatewayTransportError } from './answer-error.js';

/** Where the gateway is and who calls it. */
export interface GatewayTarget {
  /** The gateway's base URL, e.g. `http://127.0.0.1:8080` (a path such as `/vendor` is kept). */
  url: string;
  /** A gateway token, without `Bearer `. */
  token: string;
  userAgent: string;
}

export interface CallOptions {
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string | FormData;
  signal?: AbortSignal;
  /** Send no `Authorization` (the upload form's credential is its signed policy). */
  anonymous?: boolean;
}

/**
 * The HTTP side of every command: one call to the gateway, a failing status turned into the
 * gateway's own error (GatewayAnswerError), a network failure into a GatewayTransportError.
 */
export class GatewayClient {
  readonly paths = GATEWAY_PATHS;

  constructor(readonly target: GatewayTarget) {}

  /** `path` under the base URL, or an absolute URL as it is (an image or upload URL). */
  urlOf(path: string): string {
    if (/^https?:\/\//i.test(path)) return path;
    return `${this.target.url.replace(/\/+$/, '')}${path}`;
  }

  /** Calls the gateway; answers the response when its status is 2xx. */
  async call(path: string, options: CallOptions = {}): Promise<Response> {
    const headers: Record<string, string> = {
      'User-Agent': this.target.userAgent,
      ...options.headers,
    };
    if (options.anonymous !== true) headers.Authorization = `Bearer ${this.target.token}`;
    if (typeof options.body === 'string') headers['Content-Type'] = 'application/json';
    let response: Response;
    try {
      response = await fetch(this.urlOf(path), {
        method: options.method ?? (options.body === undefined ? 'GET' : 'POST'),
        headers,
        body: options.body,
        signal: options.signal,
      });
    } catch (error) {
      if (options.signal?.aborted === true) throw error;
      throw new GatewayTransportError(
        `cannot reach the gateway at ${this.urlOf(path)}: ${describeCause(error)}`,
      );
    }
    if (!response.ok) throw await answerErrorOf(response);
    return response;
  }

  /** Calls the gateway and reads its JSON answer. */
  async json<T>(path: string, options: CallOptions = {}): Promise<{ body: T; response: Response }> {
    const response = await this.call(path, options);
    const text = await response.text();
    try {
      return { body: JSON.parse(text) as T, response };
    } catch {
      throw new GatewayTransportError(
        `${this.urlOf(path)} answered ${response.status} without JSON`,
      );
    }
  }
}

function describeCause(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error instanceof Error ? error.message : String(error));
}
