import { Readable } from 'node:stream';
import type { Agent, Dispatcher } from 'undici';
import type { Cancellation } from '../support/cancellation.js';
import { describeFailure } from './http-failure.js';
import {
  abortReason,
  type HttpDownload,
  type ResponseHeaders,
  wholeResponse,
} from './upstream-exchange.js';

/**
 * Collects one download for `UpstreamHttp.download`, or hands it over as a stream once it is too
 * long to hold: the stream pauses the connection while its reader does not keep up.
 */
export class DownloadAnswer implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | undefined;
  private status = 0;
  private headers: ResponseHeaders = {};
  private chunks: Buffer[] = [];
  private received = 0;
  private stream: Readable | undefined;
  private ended = false;
  private settled = false;
  private readonly onAbort = () => {
    const reason = abortReason(this.signal);
    this.fail(reason);
    this.stream?.destroy(reason);
    this.controller?.abort(reason);
  };

  constructor(
    private readonly url: string,
    private readonly signal: Cancellation,
    private readonly wholeMaxBytes: number,
    private readonly resolve: (outcome: HttpDownload) => void,
  ) {}

  start(agent: Agent): void {
    if (this.signal.aborted) return this.fail(abortReason(this.signal));
    this.signal.addEventListener('abort', this.onAbort);
    try {
      const url = new URL(this.url);
      agent.dispatch(
        {
          origin: url.origin,
          path: `${url.pathname}${url.search}`,
          method: 'GET',
          headers: { accept: 'image/png,image/*;q=0.8' },
        },
        this,
      );
    } catch (error) {
      this.fail(error);
    }
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.settled && this.stream === undefined) controller.abort(new Error('already settled'));
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    status: number,
    received: object,
  ): void {
    const headers = received as ResponseHeaders;
    const declared = Number(headers['content-length']);
    if (Number.isSafeInteger(declared) && declared <= this.wholeMaxBytes) {
      this.status = status;
      this.headers = headers;
      return;
    }
    const stream = new Readable({
      read: () => controller.resume(),
      destroy: (error, callback) => {
        // Destroyed by its reader before its end: nobody wants the rest.
        if (!this.ended) controller.abort(error ?? new Error('download abandoned'));
        this.signal.removeEventListener('abort', this.onAbort);
        callback(error);
      },
    });
    this.stream = stream;
    this.settle({ kind: 'stream', status, headers, body: stream }, false);
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.stream !== undefined) {
      if (!this.stream.push(chunk)) controller.pause();
      return;
    }
    this.received += chunk.length;
    if (this.received > this.wholeMaxBytes) {
      this.fail(new Error(`image longer than its Content-Length`));
      controller.abort(new Error('answer over its declared length'));
      return;
    }
    this.chunks.push(chunk);
  }

  onResponseEnd(): void {
    this.ended = true;
    if (this.stream !== undefined) {
      this.stream.push(null);
      this.signal.removeEventListener('abort', this.onAbort);
      return;
    }
    this.settle(wholeResponse(this.status, this.headers, this.chunks));
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: Error): void {
    this.ended = true;
    if (this.stream !== undefined) this.stream.destroy(error);
    else this.fail(error);
  }

  private fail(error: unknown): void {
    this.settle(describeFailure(error, true, this.signal));
  }

  /** `stopListening`: false while a handed-over stream still follows the signal. */
  private settle(outcome: HttpDownload, stopListening = true): void {
    if (this.settled) return;
    this.settled = true;
    if (stopListening) this.signal.removeEventListener('abort', this.onAbort);
    this.resolve(outcome);
  }
}
