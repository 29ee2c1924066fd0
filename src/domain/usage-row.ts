import type { RecordedCode } from '../errors/error-table.js';
/**
 * Status of a stand-in row: a request whose own row is not written yet. It is written for a
 * request that billed images before its end (an incremental stream) or whose reservation was
 * reclaimed, and the request's own row replaces it; it stays only for a request lost with its node.
 */
export const STAND_IN_STATUS = 0;

/** One request as the usage ledger records it: who, what, outcome, images, cost and timings. */
export interface UsageRow {
  /** Unique per row, so that retried writes never record a request twice. */
  id: string;
  requestId: string;
  tokenId: string | undefined;
  account: string;
  model: string | undefined;
  mode: string | undefined;
  channel: string | undefined;
  /** The HTTP status answered. */
  status: number;
  errorCode: RecordedCode | undefined;
  imagesRequested: number;
  /** What the upstream said it produced (its `usage.image_count`); undefined when it says nothing. */
  imagesReported: number | undefined;
  /** Images the gateway received from its engine, extras beyond `n` included. */
  imagesReceived: number;
  /** Images in the answer the caller got; never more than `n`. */
  imagesDelivered: number;
  /** Images counted against the token and priced; never more than delivered. */
  imagesBilled: number;
  /** `W*H` of the produced images. */
  outputSize: string | undefined;
  /** Millionths of the configured currency unit. */
  costMicros: number;
  gatewayMs: number;
  upstreamMs: number | undefined;
  /** Waiting in the gateway's own queues (part of gatewayMs), when it waited. */
  queueMs: number | undefined;
  /** Storing the images, when they were stored. */
  storageMs: number | undefined;
  /** An idempotent replay: nothing was generated or billed. */
  replayed: boolean;
  /** When the request arrived, milliseconds since the epoch. */
  createdAt: number;
  /** The DashScope workspace the caller named (`X-DashScope-WorkSpace`), if any. */
  workspace: string | undefined;
  /** The protocol the request came in by: `dashscope` for the DashScope routes. */
  frontDoor: string;
}
