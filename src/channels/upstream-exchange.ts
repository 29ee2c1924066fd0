import type { Readable } from 'node:stream';
import type { Cancellation } from '../support/cancellation.js';
import type { StreamedBody } from './streamed-json.js';

export type ResponseHeaders = Record<string, string | string[] | undefined>;

export interface HttpRequest {
  method: 'GET' | 'POST';
  url: string;
  headers: Record<string, string>;
  /** Sent with a Content-Length; a StreamedBody is made a chunk at a time as the socket takes it. */
  body?: Buffer | StreamedBody;
  signal: Cancellation;
  /** Larger answers are cut off and reported as a failure. */
  maxResponseBytes: number;
}

export interface HttpResponse {
  kind: 'response';
  status: number;
  headers: ResponseHeaders;
  body: Buffer;
}

export type HttpOutcome = HttpResponse | HttpFailure;

/** A download: read whole when it declared a small enough length, else a stream to consume. */
export type HttpDownload =
  | HttpResponse
  | { kind: 'stream'; status: number; headers: ResponseHeaders; body: Readable }
  | HttpFailure;

export interface HttpFailure {
  kind: 'failed';
  /**
   * Whether the whole request had been handed to the connection when it failed: from then on the
   * upstream may have received and accepted it.
   */
  requestSent: boolean;
  /** The request's signal fired (caller gone or time up); the caller knows which. */
  aborted: boolean;
  detail: string;
}

/** An answer read whole: its chunks as one Buffer, copied only when there are several. */
export function wholeResponse(
  status: number,
  headers: ResponseHeaders,
  chunks: Buffer[],
): HttpResponse {
  const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
  return { kind: 'response', status, headers, body };
}

export function abortReason(signal: Cancellation): Error {
  return signal.reason instanceof Error ? signal.reason : new Error('aborted');
}
