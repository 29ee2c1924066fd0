import { type GenerationRequest, maxImagesOf } from '../domain/generation-request.js';
import { isModelId } from '../domain/models.js';
import type { UsageRow } from '../domain/usage-row.js';
import type { RecordedCode } from '../errors/error-table.js';

/** What a request asked for, once it is validated. */
export interface RequestDescription {
  model: string;
  mode: string | undefined;
  /** The most images it may produce: what its reservation held. */
  imagesRequested: number;
}

export function describe(request: GenerationRequest): RequestDescription {
  return { model: request.model, mode: request.mode, imagesRequested: maxImagesOf(request) };
}

/** A request refused before it was validated still names its model, when that is a real one. */
export function describeRefused(model: unknown): RequestDescription | undefined {
  return isModelId(model) ? { model, mode: undefined, imagesRequested: 0 } : undefined;
}

/**
 * What a request came to, as one value: every ending of the generation pipeline (and of a replay
 * or a task submission) returns one, and the request's ledger row, log line and metrics are read
 * from it. Nothing writes to it afterwards.
 */
export interface GenerationOutcome {
  description: RequestDescription | undefined;
  /** The channel tried last, when an engine names one. */
  channel?: string | undefined;
  upstreamMs?: number | undefined;
  /** Time spent waiting in the gateway's own queues (the local engine's turns). */
  queueMs?: number | undefined;
  /** Time spent storing images; absent when none was stored. */
  storageMs?: number | undefined;
  /** What the upstream said it produced (and charges for), when it said. */
  imagesReported?: number | undefined;
  /** Images the engine handed back, extras included. */
  imagesReceived: number;
  /** Images in the answer, or handed to the caller's connection one by one. */
  imagesDelivered: number;
  imagesBilled: number;
  costMicros: number;
  /** `W*H` of the images billed or delivered. */
  outputSize?: string | undefined;
  /** A ledger-only code that says more than the answer (DeliveredUnbilled, CallerGone...). */
  code?: RecordedCode | undefined;
  /** The status the row records instead of the one answered: a stream's error after its 200. */
  status?: number | undefined;
  replayed?: boolean;
  /**
   * Where its row was written already: with the billing (the settlement's row), or left to the
   * task the request became ('task'). Absent: the request's end writes it.
   */
  recorded?: UsageRow | 'task' | undefined;
}

/** A repeat of a billed request: the same images answered again, billed nothing. */
export function replayOutcome(
  request: GenerationRequest,
  result: { imageUrls: readonly string[]; width: number; height: number },
): GenerationOutcome {
  return {
    description: describe(request),
    imagesReceived: 0,
    imagesDelivered: result.imageUrls.length,
    imagesBilled: 0,
    costMicros: 0,
    outputSize: `${result.width}*${result.height}`,
    replayed: true,
  };
}

/** A request that produced, delivered and billed nothing (refused, failed, or a task's receipt). */
export function emptyOutcome(description: RequestDescription | undefined): GenerationOutcome {
  return { description, imagesReceived: 0, imagesDelivered: 0, imagesBilled: 0, costMicros: 0 };
}
