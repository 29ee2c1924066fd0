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

/** What is known about a request's attempt, for its ledger row. */
export interface FailureDetails {
  /** The channel tried last, when the engine names one. */
  channel?: string | undefined;
  /** Time the upstream took; without it, the time from admission to the end is recorded. */
  upstreamMs?: number | undefined;
  /** What the upstream said it produced (and charges for), when it said. */
  imagesReported?: number | undefined;
  /** Images the engine handed back, extras included: a cost even when nothing is delivered. */
  imagesReceived?: number | undefined;
}

export interface Settlement extends FailureDetails {
  /** The images the answer will hold: what is billed. Never more than the request's `n`. */
  imagesDelivered: number;
  width: number;
  height: number;
  /** JSON of the result, published under the request's Idempotency-Key when billed. */
  result: () => string;
  /** False once the caller has gone: then nothing is billed. */
  callerPresent: () => boolean;
}

/** A reservation held while a request runs; exactly one of settle or release ends it. */
export interface AdmissionTicket {
  /**
   * Bills the images delivered, frees the rest of the reservation and records the request. Throws
   * CallerGone, or 503 Overloaded when its reservation or key lapsed meanwhile: nothing is
   * billed then, and nothing may be delivered.
   */
  settle(settlement: Settlement): Promise<void>;
  /** Frees everything held without billing. Never throws. */
  release(error: unknown, details?: FailureDetails): Promise<void>;
}

/** Allowed models and quota reservation, checked after validation, before any engine is called. */
export interface Admission {
  admit(request: AdmissionRequest): Promise<AdmissionTicket>;
}

/** A concurrency slot (if the token has a limit) held until the request's connection ends. */
export interface GatePass {
  /** Frees the slot. Never throws; calling it again does nothing. */
  release(): Promise<void>;
}

/**
 * Rate and concurrency limits, decided from the token alone, before the request's body is read:
 * a caller over its limits never costs the gateway its upload.
 */
export interface RequestGate {
  /** Throws 429 Throttling.RateQuota when the token is over a limit. */
  pass(principal: Principal, account: RequestAccount): Promise<GatePass>;
}
