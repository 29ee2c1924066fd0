import type { Principal } from '../domain/principal.js';
import type { GenerationRequest } from '../domain/generation-request.js';
import type { RequestAccount } from '../ledger/request-account.js';

export interface GenerationContext {
  requestId: string;
  principal: Principal;
  /** Aborted when the caller goes away; engines stop their work when it fires. */
  signal: AbortSignal;
  /** The request's accounting: described here, settled by admission, recorded by its opener. */
  account: RequestAccount;
}

export interface GenerationResult {
  /** URLs of the generated PNGs, in order. Their count is what is billed. */
  imageUrls: string[];
  width: number;
  height: number;
  /** Informational token counts of model A's usage. */
  tokens: { input: number; output: number };
}

/** Everything after validation: inputs, admission, routing, engines, storage and settlement. */
export interface GenerationService {
  generate(request: GenerationRequest, context: GenerationContext): Promise<GenerationResult>;
}
