import type { Principal } from '../auth/principal.js';
import type { GenerationRequest } from '../domain/generation-request.js';

export interface AdmissionRequest {
  principal: Principal;
  request: GenerationRequest;
  /** The most images this request can produce: what must be reserved against the quota. */
  maxImages: number;
  requestId: string;
}

export interface Settlement {
  imagesProduced: number;
  width: number;
  height: number;
}

/** A reservation held while a request runs; exactly one of settle or release ends it. */
export interface AdmissionTicket {
  settle(settlement: Settlement): Promise<void>;
  release(error: unknown): Promise<void>;
}

/** Rate limits, concurrency and quota reservation, checked before any engine is called. */
export interface Admission {
  admit(request: AdmissionRequest): Promise<AdmissionTicket>;
}

/** Admission when no limit is configured: every request passes and nothing is held. */
export const unlimitedAdmission: Admission = {
  async admit() {
    return { settle: async () => undefined, release: async () => undefined };
  },
};
