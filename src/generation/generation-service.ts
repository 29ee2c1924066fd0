import type { Admission } from '../admission/admission.js';
import type { Principal } from '../domain/principal.js';
import type { GenerationRequest } from '../domain/generation-request.js';
import type { GenerationOutcome } from '../ledger/generation-outcome.js';
import type { RowLabels } from '../ledger/row-labels.js';
import type { Cancellation } from '../support/cancellation.js';

export interface GenerationContext {
  requestId: string;
  principal: Principal;
  /** Aborted when the caller goes away; engines stop their work when it fires. */
  signal: Cancellation;
  /** What the request's ledger row says whatever its outcome; the settlement's row carries them. */
  labels: RowLabels;
  /** The Idempotency-Key claim the request runs under: its settlement publishes the result. */
  claim?: { scope: string; key: string; owner: string } | undefined;
  /** The asynchronous task the request runs as: its settlement ends the task SUCCEEDED. */
  task?: { id: string; runner: string; resultTtlMs: number } | undefined;
  /**
   * The answer reads the images back from our storage (base64), so every image must be stored:
   * channels that pass upstream URLs through re-host them for this request.
   */
  storeImages?: boolean;
  /**
   * Admits the request in place of the pipeline's admission stage: an asynchronous task resumes
   * the reservation taken when it was submitted.
   */
  admission?: Admission | undefined;
  /** `X-DashScope-OssResourceResolve: enable` was sent: `oss://` inputs name uploads. */
  resolveUploads?: boolean;
  /**
   * An incremental stream: each image is stored and handed here at once, in order, before the
   * request settles (docs/api.md §10.3); it resolves whether the image reached the caller's
   * connection, and only an image that did is billed (docs/admission.md).
   */
  handOver?: (url: string, index: number) => Promise<boolean>;
}

export interface GenerationResult {
  /** URLs of the generated PNGs, in order. Their count is what is billed. */
  imageUrls: string[];
  width: number;
  height: number;
  /** Informational token counts of model A's usage. */
  tokens: { input: number; output: number };
  /**
   * When the request that produced it arrived (ms since the epoch), kept with the result so that
   * a replay under its Idempotency-Key answers the same `created` (OpenAI); absent from results
   * stored before it was kept.
   */
  createdAt?: number;
}

/** How a generation ended: its result, or the error to answer; either way, what it came to. */
export type Generation =
  | { ok: true; result: GenerationResult; outcome: GenerationOutcome }
  | { ok: false; error: unknown; outcome: GenerationOutcome };

/**
 * A generation whose images are stored and not yet billed: the answer that carries them decides
 * when. Exactly one of `billHandedOver` or `release` ends it, and says what the request came to.
 */
export interface UnbilledGeneration {
  ok: true;
  result: GenerationResult;
  /** What the request came to so far: its images stored, none delivered or billed yet. */
  outcome: GenerationOutcome;
  /**
   * Bills the images once the whole answer holding them was handed to the caller's connection:
   * the caller's presence is not asked again. A bill that fails (the database unavailable, the
   * reservation lapsed) leaves the images delivered unbilled (`DeliveredUnbilled`), as the outcome
   * says. Never throws.
   */
  billHandedOver(): Promise<GenerationOutcome>;
  /** Bills nothing and frees the reservation: the answer was not handed over. Never throws. */
  release(error: unknown): Promise<GenerationOutcome>;
}

/** Everything after validation: inputs, admission, routing, engines, storage and settlement. */
export interface GenerationService {
  /** Bills the images before the answer that carries them is sent (their URLs). Never throws. */
  generate(request: GenerationRequest, context: GenerationContext): Promise<Generation>;
  /**
   * The images stored, their bill left to the answer that carries their bytes; not with
   * `handOver`, which bills each image as it comes. Never throws.
   */
  generateUnbilled(
    request: GenerationRequest,
    context: GenerationContext,
  ): Promise<UnbilledGeneration | Extract<Generation, { ok: false }>>;
}
