import type { Agent, IncomingHttpHeaders } from 'node:http';
import { request as httpRequest } from 'node:http';
import type { Socket } from 'node:net';

/** One event as the official DashScope SDK's parser yields it. */
export interface SdkEvent {
  id: string | undefined;
  event: string | undefined;
  /** The SDK's status for the event: from a `status:` line; 400 until one is seen. */
  status: number;
  isError: boolean;
  data: string;
}

/**
 * Parses an event stream exactly as the SDK's `_handle_stream` (dashscope/common/utils.py) does:
 * line by line; blank lines skipped; `id:`, `event:` (`error` marks the stream failed), `status:`
 * and `data:` read; every other line (comments such as `:HTTP_STATUS/200`) ignored; an event is
 * yielded at each `data:` line; after an error event the SDK stops reading.
 */
export function parseLikeSdk(text: string): SdkEvent[] {
  const events: SdkEvent[] = [];
  let id: string | undefined;
  let event: string | undefined;
  let status = 400;
  let isError = false;
  for (const raw of text.split(/\r\n|\r|\n/)) {
    if (raw === '') continue;
    if (raw.startsWith('id:')) id = raw.slice('id:'.length).trim();
    else if (raw.startsWith('event:')) {
      event = raw.slice('event:'.length).trim();
      if (raw.slice('event:'.length) === 'error') isError = true;
    } else if (raw.startsWith('status:')) status = Number.parseInt(raw.slice('status:'.length), 10);
    else if (raw.startsWith('data:')) {
      events.push({ id, event, status, isError, data: raw.slice('data:'.length).trim() });
      if (isError) break;
    }
  }
  return events;
}

/** A POST whose answer is read as it arrives, which the caller may hang up on. */
export interface StreamingExchange {
  status: number;
  headers: IncomingHttpHeaders;
  /** The connection the answer came on. */
  socket: Socket;
  /** Everything received so far. */
  text(): string;
  /** Resolves once the received text contains `marker`; rejects if the answer ends first. */
  received(marker: string): Promise<void>;
  /** Resolves with the whole answer once the server ends it. */
  whole(): Promise<string>;
  hangUp(): void;
}

export function postStreaming(
  baseUrl: string,
  path: string,
  headers: Record<string, string>,
  body: unknown,
  /** Node's global agent, which keeps connections alive, unless another is given. */
  agent?: Agent,
): Promise<StreamingExchange> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(`${baseUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      ...(agent === undefined ? {} : { agent }),
    });
    request.on('error', reject);
    request.on('response', (response) => {
      let text = '';
      const waiting = new Set<() => void>();
      const ended = new Promise<void>((done) => {
        response.on('end', done);
        response.on('close', done);
      });
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        text += chunk;
        for (const check of waiting) check();
      });
      resolve({
        status: response.statusCode ?? 0,
        headers: response.headers,
        socket: response.socket,
        text: () => text,
        received: (marker) =>
          new Promise<void>((found, missing) => {
            const check = () => {
              if (!text.includes(marker)) return;
              waiting.delete(check);
              found();
            };
            waiting.add(check);
            check();
            void ended.then(() => {
              if (!text.includes(marker)) missing(new Error(`answer ended without ${marker}`));
            });
          }),
        whole: async () => {
          await ended;
          return text;
        },
        hangUp: () => request.destroy(),
      });
    });
    request.end(JSON.stringify(body));
  });
}
