import { randomUUID } from 'node:crypto';
import type { GenerationRequest } from '../domain/generation-request.js';
import type { UsageRow } from '../domain/usage-row.js';

/** Who made a request, as the ledger names them. */
export interface UsageOwner {
  tokenId: string | undefined;
  account: string;
}

export interface UsageOutcome {
  status: number;
  costMicros: number;
  /** When the request ended, milliseconds since the epoch. */
  endedAt: number;
}

/**
 * What one request has learned so far, for its ledger row. The HTTP layer opens it, validation
 * names the model, admission and settlement fill in the rest; the row is written exactly once,
 * with the settlement when images were billed, or when the response is sent otherwise.
 */
export class UsageDraft {
  model: string | undefined;
  mode: string | undefined;
  imagesRequested = 0;
  imagesProduced = 0;
  outputSize: string | undefined;
  channel: string | undefined;
  upstreamMs: number | undefined;
  /** The error code answered, once a failure has been sent. */
  errorCode: string | undefined;
  replayed = false;
  /** True once the row is in the database or the write queue: nothing more is recorded. */
  recorded = false;
  /** One id per request, so that every write of its row, or of a stand-in for it, is the same row. */
  readonly rowId = randomUUID();
  /** Headers every response of this request carries, such as the rate limit's state. */
  readonly responseHeaders: Record<string, string> = {};

  constructor(
    readonly requestId: string,
    readonly receivedAt: number,
  ) {}

  describe(request: GenerationRequest, imagesRequested: number): void {
    this.model = request.model;
    this.mode = request.mode;
    this.imagesRequested = imagesRequested;
  }

  toRow(owner: UsageOwner, outcome: UsageOutcome): UsageRow {
    return {
      id: this.rowId,
      requestId: this.requestId,
      tokenId: owner.tokenId,
      account: owner.account,
      model: this.model,
      mode: this.mode,
      channel: this.channel,
      status: outcome.status,
      errorCode: this.errorCode,
      imagesRequested: this.imagesRequested,
      imagesProduced: this.imagesProduced,
      outputSize: this.outputSize,
      costMicros: outcome.costMicros,
      gatewayMs: Math.max(0, outcome.endedAt - this.receivedAt),
      upstreamMs: this.upstreamMs,
      replayed: this.replayed,
      createdAt: this.receivedAt,
    };
  }
}
