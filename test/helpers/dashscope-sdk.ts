import { eventually } from './waits.js';

/**
 * The wire format of the official DashScope Python SDK's task calls, request for request:
 * ImageGeneration.async_call (BaseApi.call with `X-DashScope-Async: enable` and
 * `parameters.is_async: true`), BaseAsyncApi.fetch/wait (GET tasks/{id}), cancel (POST
 * tasks/{id}/cancel, no body) and list (GET tasks?page_no&page_size&...). Answers are read as the
 * SDK reads them: on 200 `output`, `usage` and `request_id`; otherwise `code` and `message`; for
 * list, the whole body but `request_id` is the output.
 */
export interface SdkResponse {
  status_code: number;
  request_id: string;
  code: string | undefined;
  message: string | undefined;
  output: Record<string, unknown> | undefined;
  usage: Record<string, unknown> | undefined;
  headers: Headers;
}

const USER_AGENT = 'dashscope/1.26.2; python/3.12.0; platform/Linux; processor/x86_64';
/** The statuses that end BaseAsyncApi.wait. */
const FINAL = new Set(['FAILED', 'CANCELED', 'SUCCEEDED', 'UNKNOWN']);

export class DashScopeSdk {
  /** `baseHttpApiUrl` as `dashscope.base_http_api_url`: `http://HOST:PORT/vendor/api/v1`. */
  constructor(
    private readonly baseHttpApiUrl: string,
    readonly apiKey: string,
  ) {}

  private defaultHeaders(): Record<string, string> {
    return {
      'user-agent': USER_AGENT,
      Authorization: `Bearer ${this.apiKey}`,
      Accept: 'application/json; charset=utf-8',
    };
  }

  /** ImageGeneration.async_call(model, messages=..., **parameters). */
  async asyncCall(
    model: string,
    messages: object[],
    parameters: Record<string, unknown> = {},
    extraHeaders: Record<string, string> = {},
  ): Promise<SdkResponse> {
    const response = await fetch(
      `${this.baseHttpApiUrl}/services/aigc/image-generation/generation`,
      {
        method: 'POST',
        headers: {
          ...this.defaultHeaders(),
          'user-agent': `${USER_AGENT}; incremental_to_full/0`,
          'X-DashScope-Async': 'enable',
          'Content-Type': 'application/json; charset=utf-8',
          ...extraHeaders,
        },
        body: JSON.stringify({
          model,
          parameters: { ...parameters, is_async: true },
          input: { messages },
        }),
      },
    );
    return read(response);
  }

  /** BaseAsyncApi.fetch(task). */
  async fetch(taskId: string): Promise<SdkResponse> {
    return read(
      await fetch(`${this.baseHttpApiUrl}/tasks/${taskId}`, { headers: this.defaultHeaders() }),
    );
  }

  /** BaseAsyncApi.wait(task): polls until a final status (faster than the SDK's 1-5 s). */
  async wait(taskId: string, timeoutMs = 30_000): Promise<SdkResponse> {
    let answer: SdkResponse | undefined;
    await eventually(
      async () => {
        answer = await this.fetch(taskId);
        return isFinal(answer);
      },
      timeoutMs,
      `task ${taskId} reaching a final status`,
      20,
    );
    return answer as SdkResponse;
  }

  /** BaseAsyncApi.cancel(task): a POST without a body. */
  async cancel(taskId: string): Promise<SdkResponse> {
    return read(
      await fetch(`${this.baseHttpApiUrl}/tasks/${taskId}/cancel`, {
        method: 'POST',
        headers: this.defaultHeaders(),
      }),
    );
  }

  /** BaseAsyncApi.list(...): page_no and page_size always, the rest when given. */
  async list(filters: Record<string, string | number> = {}): Promise<SdkResponse> {
    const params = new URLSearchParams({ page_no: '1', page_size: '10' });
    for (const [name, value] of Object.entries(filters)) params.set(name, String(value));
    const response = await fetch(`${this.baseHttpApiUrl}/tasks?${params.toString()}`, {
      headers: this.defaultHeaders(),
    });
    if (response.status !== 200) return read(response);
    const json = (await response.json()) as Record<string, unknown>;
    const requestId = typeof json.request_id === 'string' ? json.request_id : '';
    delete json.request_id;
    return {
      status_code: 200,
      request_id: requestId,
      code: undefined,
      message: '',
      output: json,
      usage: undefined,
      headers: response.headers,
    };
  }
}

async function read(response: Response): Promise<SdkResponse> {
  const json = (await response.json()) as Record<string, unknown>;
  const text = (name: string) => (typeof json[name] === 'string' ? json[name] : undefined);
  const object = (name: string) => {
    const value = json[name];
    return typeof value === 'object' && value !== null
      ? (value as Record<string, unknown>)
      : undefined;
  };
  return {
    status_code: response.status,
    request_id: text('request_id') ?? '',
    code: response.status === 200 ? undefined : text('code'),
    message: response.status === 200 ? undefined : text('message'),
    output: response.status === 200 ? object('output') : undefined,
    usage: response.status === 200 ? object('usage') : undefined,
    headers: response.headers,
  };
}

/** An answer that polling stops at: a final task status, or an error other than load. */
function isFinal(answer: SdkResponse): boolean {
  if (answer.status_code !== 200 && answer.status_code !== 503 && answer.status_code !== 504)
    return true;
  const status = answer.output?.task_status;
  return answer.status_code === 200 && (typeof status !== 'string' || FINAL.has(status));
}
