import type { Principal } from '../domain/principal.js';
import type { GenerationRequest } from '../domain/generation-request.js';
import type { RequestAccount } from '../ledger/request-account.js';

export interface AdmissionRequest {
  principal: Principal;
  request: GenerationRequest;
  /** The most images this request can produce: what must be reserved against the quota. */
  maxImages: number;
  /** The request's accounting; settlement writes its ledger row together with the billing. */
  account: RequestAccount;
}

export interface Settlement {
  imagesProduced: number;
  width: number;
  height: number;
  /** The channel that produced the images, when the engine names one. */
  channel?: string | undefined;
  /** Time the upstream took; without it, the time from admission to settlement is recorded. */
  upstreamMs?: number | undefined;
}

/** What is known about a failed request's attempt, for its ledger row. */
export interface FailureDetails {
  channel?: string | undefined;
  upstreamMs?: number | undefined;
}

/** A reservation held while a request runs; exactly one of settle or release ends it. */
export interface AdmissionTicket {
  /** Bills the images produced, frees the rest of the reservation and records the request. */
  settle(settlement: Settlement): Promise<void>;
  /** Frees everything held without billing. Never throws. */
  release(error: unknown, details?: FailureDetails): Promise<void>;
}

/** Rate limits, concurrency and quota reservation, checked before any engine is called. */
export interface Admission {
  admit(request: AdmissionRequest): Promise<AdmissionTicket>;
}
