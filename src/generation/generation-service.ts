import type { Admission } from '../admission/admission.js';
import type { Principal } from '../domain/principal.js';
import type { GenerationRequest } from '../domain/generation-request.js';
import type { RequestAccount } from '../ledger/request-account.js';
import type { Cancellation } from '../support/cancellation.js';

export interface GenerationContext {
  requestId: string;
  principal: Principal;
  /** Aborted when the caller goes away; engines stop their work when it fires. */
  signal: Cancellation;
  /** The request's accounting: described here, settled by admission, recorded by its opener. */
  account: RequestAccount;
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

/**
 * A generation whose images are stored and not yet billed: the answer that carries them decides
 * when. Exactly one of `billHandedOver` or `release` ends it.
 */
export interface UnbilledGeneration {
  result: GenerationResult;
  /**
   * Bills the images once the whole answer holding them was handed to the caller's connection:
   * the caller's presence is not asked again. A bill that fails (the database unavailable, the
   * reservation lapsed) leaves the request's row saying its images were delivered unbilled, and
   * throws.
   */
  billHandedOver(): Promise<void>;
  /** Bills nothing and frees the reservation: the answer was not handed over. Never throws. */
  release(error: unknown): Promise<void>;
}

/** Everything after validation: inputs, admission, routing, engines, storage and settlement. */
export interface GenerationService {
  /** Bills the images before the answer that carries them is sent (their URLs). */
  generate(request: GenerationRequest, context: GenerationContext): Promise<GenerationResult>;
  /**
   * The images stored, their bill left to the answer that carries their bytes; not with
   * `handOver`, which bills each image as it comes.
   */
  generateUnbilled(
    request: GenerationRequest,
    context: GenerationContext,
  ): Promise<UnbilledGeneration>;
}
