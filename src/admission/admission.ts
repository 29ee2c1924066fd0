import type { ModelId } from '../domain/models.js';
import type { Principal } from '../domain/principal.js';
import type { GenerationRequest } from '../domain/generation-request.js';
import type { RowLabels } from '../ledger/row-labels.js';
import type { Settled } from '../store/billing/quota-types.js';
import type { CertificateCapacity, CheckedCertificate } from '../storage/upload-policy.js';

export interface AdmissionRequest {
  principal: Principal;
  request: GenerationRequest;
  /** The most images this request can produce: what must be reserved against the quota. */
  maxImages: number;
  /** The request's row labels: settlement writes its ledger row together with the billing. */
  labels: RowLabels;
  /** The Idempotency-Key claim the request runs under: its settlement publishes the result. */
  claim?: { scope: string; key: string; owner: string } | undefined;
  /** The asynchronous task the request runs as: its settlement ends the task SUCCEEDED. */
  task?: { id: string; runner: string; resultTtlMs: number } | undefined;
}

/** What is known about a request's attempt, for its ledger row. */
export interface AttemptFacts {
  /** The channel tried last, when the engine names one. */
  channel?: string | undefined;
  /** Time the upstream took; without it, the time from admission to the end is recorded. */
  upstreamMs?: number | undefined;
  /** What the upstream said it produced (and charges for), when it said. */
  imagesReported?: number | undefined;
  /** Images the engine handed back, extras included: a cost even when nothing is delivered. */
  imagesReceived?: number | undefined;
  /** Time the job waited for a turn in the gateway's own queues. */
  queueMs?: number | undefined;
  /** Time spent saving the images to result storage. */
  storageMs?: number | undefined;
}

export interface Settlement extends AttemptFacts {
  /** The images the answer will hold: what is billed. Never more than the request's `n`. */
  imagesDelivered: number;
  width: number;
  height: number;
  /** The result, published under the request's Idempotency-Key (or on its task) when billed. */
  result: object;
  /**
   * Aborted once the caller has gone: then nothing is billed. Absent when the answer was handed
   * over already: the caller's presence is no fence then.
   */
  caller?: { readonly aborted: boolean } | undefined;
  /**
   * The answer holding the images was handed to the caller's connection before this bill: a
   * settlement that bills nothing (its reservation or key lapsed) still records them delivered.
   */
  handedOver?: boolean;
}

export type { Settled } from '../store/billing/quota-types.js';

/** What a request billed image by image before it ended (an incremental stream). */
export interface BilledSoFar {
  imagesDelivered: number;
  imagesBilled: number;
  costMicros: number;
}

/** A reservation held while a request runs; exactly one of settle or release ends it. */
export interface AdmissionTicket {
  /**
   * Bills the images delivered, frees the rest of the reservation and records the request, in one
   * transaction. Unless it comes back `billed`, nothing was billed (the caller gone, the
   * reservation or key lapsed) and nothing may be delivered. Throws when the database cannot say
   * (503 Overloaded).
   */
  settle(settlement: Settlement): Promise<Settled>;
  /**
   * Bills `images` that have just reached the caller's connection, before the request settles
   * (an incremental stream): they count as delivered whatever becomes of the bill. Under the
   * settlement's leases (reservation, Idempotency-Key claim), not the caller's presence: the
   * images were handed over. Throws as settle does when a lease is lost, or when the database
   * fails: nothing is billed then. The settlement later bills only what was not billed this way.
   */
  billDelivered(images: number): Promise<void>;
  /** Frees everything held without billing what was not billed yet. Never throws. */
  release(): Promise<BilledSoFar>;
}

/** Allowed models and quota reservation, checked after validation, before any engine is called. */
export interface Admission {
  admit(request: AdmissionRequest): Promise<AdmissionTicket>;
}

/** A concurrency slot (if the token has a limit) held until the request's connection ends. */
export interface GatePass {
  /** The rate limit's state, which every answer to the request carries. */
  headers: Readonly<Record<string, string>>;
  /** Frees the slot. Never throws; calling it again does nothing. */
  release(): Promise<void>;
}

/** The pass of a request that holds no slot and counts against no rate: nothing to free or say. */
export const NO_SLOT: GatePass = { headers: {}, release: async () => undefined };

/**
 * Rate and concurrency limits, decided from the token alone, before the request's body is read:
 * a caller over its limits never costs the gateway its upload.
 */
export interface RequestGate {
  /**
   * Rejects with 429 Throttling.RateQuota when the token is over a limit. A token known to have
   * neither a rate nor a concurrency limit passes at once, without a promise.
   */
  pass(principal: Principal): GatePass | Promise<GatePass>;
}

/** Which models a caller may use, for listing them (GET /v1/models). */
export interface ModelAccess {
  /** The models the caller's token may use; undefined: every model. */
  allowedModels(principal: Principal): Promise<readonly ModelId[] | undefined>;
}

/**
 * Admission of asynchronous tasks: the reservation is taken when the task is submitted and
 * outlives that request; the node that later runs the task resumes it as a ticket.
 */
export interface TaskReservations {
  /** The checks and reservation of `admit`; returns the reservation's id (none without a quota). */
  reserveFor(request: AdmissionRequest): Promise<string | undefined>;
  /** The ticket of a reservation taken at submission; one that lapsed meanwhile is taken again. */
  resume(request: AdmissionRequest, reservationId: string | undefined): Promise<AdmissionTicket>;
  /** Frees a reservation without billing. Never throws. */
  releaseReserved(principal: Principal, reservationId: string | undefined): Promise<void>;
  /** The token's own bound on its PENDING tasks; undefined: the deployment's applies. */
  pendingTasksAllowed(principal: Principal): Promise<number | undefined>;
}

/** A file counted against its bounds; `refund` takes it back when it is not stored after all. */
export interface UploadCharge {
  refund(): Promise<void>;
}

/** Upload certificates and the files posted with them, bounded per certificate and per token. */
export interface UploadAdmission {
  /**
   * Admits a certificate request of the token `tokenId` for `model`: the model allowed (401),
   * one request counted against its rate (429). Answers what the certificate may carry and the
   * rate headers of the answer.
   */
  certify(
    tokenId: string,
    model: ModelId,
  ): Promise<{ capacity: CertificateCapacity; headers: Record<string, string> }>;
  /** Counts a file against its certificate and its token's window, or throws 429 naming which. */
  charge(certificate: CheckedCertificate, bytes: number): Promise<UploadCharge>;
}
