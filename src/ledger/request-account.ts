import { timeOrderedUuid } from '../support/time-ordered-id.js';
import type { GenerationRequest } from '../domain/generation-request.js';
import { DASHSCOPE_FRONT_DOOR } from '../domain/front-door.js';
import { isModelId } from '../domain/models.js';
import type { UsageRow } from '../domain/usage-row.js';
import type { GatewayError } from '../errors/gateway-error.js';
import { LEDGER_CODES, type RecordedCode } from '../errors/error-table.js';

/** Status of a ledger row whose caller went away before the answer (nginx's convention). */
export const CALLER_GONE_STATUS = LEDGER_CODES.CallerGone.status;

/** The part of a replayed result the ledger row describes. */
export interface ReplayedResult {
  imageUrls: readonly string[];
  width: number;
  height: number;
}

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
 * The accounting of one request: what it asked for, what it produced, how it ended, and whether
 * its ledger row has been written. The HTTP layer opens one per request and passes it down;
 * the pipeline describes it, admission settles it (writing the row with the billing), and the
 * HTTP layer writes the row of every request that billed nothing once the answer is sent.
 * The row is written exactly once.
 */
export class RequestAccount {
  model: string | undefined;
  mode: string | undefined;
  imagesRequested = 0;
  /** What the upstream said it produced; undefined when it said nothing (or nothing ran). */
  imagesReported: number | undefined;
  /** Images the engine handed back, extras included. */
  imagesReceived = 0;
  /** Images in the answer; set once the answer holds them. */
  imagesDelivered = 0;
  /** Images counted against the token; set by settlement, or image by image for incremental streams. */
  imagesBilled = 0;
  /** The cost of the images billed image by image when the request ends without settling. */
  partialCostMicros = 0;
  outputSize: string | undefined;
  channel: string | undefined;
  upstreamMs: number | undefined;
  /** Time the results stage spent storing images; undefined when it stored none. */
  storageMs: number | undefined;
  /** Time spent waiting in the gateway's own queues (the local engine's turns). */
  queueMs: number | undefined;
  /** The code of the error answered, when the request failed. */
  errorCode: RecordedCode | undefined;
  replayed = false;
  /** The DashScope workspace the caller named, if any. */
  workspace: string | undefined;
  /** The protocol the request came in by; a route of another front door sets its own. */
  frontDoor: string = DASHSCOPE_FRONT_DOOR;
  /** The Idempotency-Key claim the request runs under, fenced by the settlement. */
  idempotency: { scope: string; key: string; owner: string } | undefined;
  /** The asynchronous task the request runs as: its settlement ends the task SUCCEEDED. */
  task: { id: string; runner: string; resultTtlMs: number } | undefined;
  /** True once the row is in the database or the write queue: nothing more is recorded. */
  recorded = false;
  /** The row recorded, once it is: the request log reports what it says. */
  writtenRow: UsageRow | undefined;
  /** One id per request, so that every write of its row, or of a stand-in for it, is the same row. */
  readonly rowId: string;
  /** Headers every response of this request carries, such as the rate limit's state. */
  readonly responseHeaders: Record<string, string> = {};
  private statusOverride: number | undefined;
  private readonly work = new Set<Promise<void>>();

  /** `rowId`: the row an earlier accounting of the same work opened (a task resumed by its runner). */
  constructor(
    readonly requestId: string,
    readonly receivedAt: number,
    rowId: string = timeOrderedUuid(),
  ) {
    this.rowId = rowId;
  }

  describe(request: GenerationRequest, imagesRequested: number): void {
    this.model = request.model;
    this.mode = request.mode;
    this.imagesRequested = imagesRequested;
  }

  /** The request repeats one that was billed: the same images again, billed nothing. */
  replayOf(request: GenerationRequest, imagesRequested: number, result: ReplayedResult): void {
    this.describe(request, imagesRequested);
    this.replayed = true;
    this.imagesDelivered = result.imageUrls.length;
    this.outputSize = `${result.width}*${result.height}`;
  }

  /** A request refused before validation named its model still names it when it is a real one. */
  describeModelOf(body: unknown): void {
    const model = (body as { model?: unknown } | null | undefined)?.model;
    if (this.model === undefined && isModelId(model)) this.model = model;
  }

  /** `row` is in the database or the write queue: nothing more is recorded. */
  rowWritten(row: UsageRow): void {
    this.recorded = true;
    this.writtenRow = row;
  }

  /** The answer holding `images` was handed over and their bill failed: delivered, billed nothing. */
  deliveredUnbilled(images: number, size: { width: number; height: number }): void {
    this.imagesDelivered = images;
    this.imagesBilled = 0;
    this.partialCostMicros = 0;
    this.outputSize = `${size.width}*${size.height}`;
    this.errorCode = 'DeliveredUnbilled';
  }

  failed(error: GatewayError): void {
    this.errorCode = error.code;
  }

  /**
   * The request failed after its answer began with status 200 (a stream): the row records the
   * status the error carries, as if it had been answered on its own.
   */
  failedMidAnswer(error: GatewayError): void {
    this.errorCode = error.code;
    this.statusOverride = error.status;
  }

  /**
   * Follows work done for the request (its generation), so that a row written because the caller
   * left waits for what that work learns on its way out (the images an upstream produced).
   */
  track<T>(work: Promise<T>): Promise<T> {
    const settled = work.then(
      () => undefined,
      () => undefined,
    );
    this.work.add(settled);
    void settled.then(() => this.work.delete(settled));
    return work;
  }

  /** Whether tracked work is under way. */
  get busy(): boolean {
    return this.work.size > 0;
  }

  /** Resolves once no tracked work is under way. */
  async idle(): Promise<void> {
    while (this.work.size > 0) await Promise.all(this.work);
  }

  /**
   * The caller left before the answer; its row gets status 499 and code `CallerGone`, unless its
   * row was written already (billed before the answer): that row stands.
   */
  callerLeft(): void {
    if (this.recorded) return;
    this.errorCode = 'CallerGone';
    this.statusOverride = CALLER_GONE_STATUS;
  }

  /** The status the row records: the one answered, or 499 when nobody was there to answer. */
  statusFor(answered: number): number {
    return this.statusOverride ?? answered;
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
      imagesReported: this.imagesReported,
      imagesReceived: this.imagesReceived,
      imagesDelivered: this.imagesDelivered,
      imagesBilled: this.imagesBilled,
      outputSize: this.outputSize,
      costMicros: outcome.costMicros,
      gatewayMs: Math.max(0, outcome.endedAt - this.receivedAt),
      upstreamMs: this.upstreamMs,
      replayed: this.replayed,
      createdAt: this.receivedAt,
      workspace: this.workspace,
      frontDoor: this.frontDoor,
    };
  }
}
