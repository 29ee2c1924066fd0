import { randomUUID } from 'node:crypto';
import { timeOrderedUuid } from '../support/time-ordered-id.js';
import type { ImagePrices } from '../domain/image-prices.js';
import type { ModelId } from '../domain/models.js';
import type { Principal } from '../domain/principal.js';
import { GatewayError } from '../errors/gateway-error.js';
import { costOf } from '../ledger/prices.js';
import { emptyOutcome, type RequestDescription } from '../ledger/generation-outcome.js';
import { standInRowOf, usageRowOf } from '../ledger/usage-row-of.js';
import type { UsageRow } from '../domain/usage-row.js';
import { leaseLost } from './lease-lost.js';
import type {
  DeliveryFence,
  ReservationRequest,
  Settled,
  SettlementOutcome,
  SettlementPlan,
} from '../store/billing/quota-store.js';
import { settledRow } from '../store/billing/settled-row.js';
import {
  DATABASE_RETRY_AFTER_S,
  isDatabaseUnavailable,
} from '../store/database/database-unavailable.js';
import type {
  Admission,
  AdmissionRequest,
  AdmissionTicket,
  GatePass,
  ModelAccess,
  RequestGate,
  Settlement,
  TaskReservations,
} from './admission.js';
import { type Log, warnAtMostEvery } from '../support/log.js';
import type { LimitsSource } from './limits-source.js';
import { Heartbeat } from '../support/heartbeat.js';
import { rateHeaders, slotHeaders } from './rate-headers.js';
import type { GateDecision, RateDecision, RateLimiter, SlotHold } from './rate-limiter.js';
import { NO_LIMITS, type TokenLimits } from '../domain/token-limits.js';
import { NO_SLOT } from './admission.js';

/** The quota operations admission needs; SqlQuotaStore provides them. */
export interface QuotaBook {
  reserve(request: ReservationRequest, now: number, expiresAt: number): Promise<boolean>;
  renew(ids: readonly string[], expiresAt: number): Promise<void>;
  /** Pushes one reservation's expiry forward; false when it is gone (lapsed and reclaimed). */
  extend(id: string, expiresAt: number): Promise<boolean>;
  /** Settles by `plan`: the outcome, and the row written for it (or that describes it). */
  settle(plan: SettlementPlan): Promise<Settled>;
  billDelivered(
    tokenId: string | undefined,
    fence: DeliveryFence,
    images: number,
  ): Promise<SettlementOutcome>;
  /** Whether the ledger row `rowId` was written by a settlement that billed. */
  isBilled(rowId: string): Promise<boolean>;
  /** The images the stand-in row `rowId` says were billed one by one; 0 when it has none. */
  billedOnStandIn(rowId: string): Promise<number>;
  release(reservationId: string, tokenId: string): Promise<void>;
  reclaimExpired(now: number, tokenId?: string): Promise<number>;
}

export interface TokenAdmissionOptions {
  limits: LimitsSource;
  limiter: RateLimiter;
  quota: QuotaBook;
  prices: ImagePrices;
  /** How long a reservation or slot outlives its node; live nodes renew every third of it. */
  leaseTtlMs: number;
  now: () => number;
  log: Log;
}

const MINUTE_MS = 60_000;
/** A limiter failure is reported at most this often; requests pass meanwhile (fail open). */
const LIMITER_REPORT_EVERY_MS = 10_000;

/**
 * Admission by the caller's token, each check only when the token has that limit: concurrency and
 * requests per minute at the gate, before the body is read; allowed models and the image quota
 * at admission, once the request is validated. Rate and concurrency fail open when the limiter
 * is unreachable (the quota, in the database, never does).
 */
export class TokenAdmission implements Admission, RequestGate, ModelAccess, TaskReservations {
  private readonly reservations: Heartbeat<string>;
  private readonly slots: Heartbeat<SlotHold>;
  private readonly warnLimiter: (fields: object, message: string) => void;

  constructor(private readonly options: TokenAdmissionOptions) {
    this.warnLimiter = warnAtMostEvery(options.log, LIMITER_REPORT_EVERY_MS);
    const every = Math.max(1, Math.floor(options.leaseTtlMs / 3));
    this.reservations = new Heartbeat(
      every,
      (ids) => options.quota.renew(ids, options.now() + options.leaseTtlMs),
      (error) => options.log.warn({ err: String(error) }, 'renewing quota reservations failed'),
    );
    this.slots = new Heartbeat(
      every,
      (holds) => options.limiter.renewSlots(holds, options.leaseTtlMs),
      (error) => this.limiterFailed(error),
    );
  }

  pass(principal: Principal): GatePass | Promise<GatePass> {
    const tokenId = principal.tokenId;
    if (tokenId === undefined) return NO_SLOT;
    const remembered = this.options.limits.peek?.(tokenId);
    if (remembered === undefined) return this.passUnder(tokenId, undefined);
    const limits = remembered.value ?? NO_LIMITS;
    if (limits.maxConcurrent === undefined && limits.requestsPerMinute === undefined)
      return NO_SLOT;
    return this.passUnder(tokenId, limits);
  }

  /** `limits`: as just looked up; undefined: not at hand yet. */
  private async passUnder(tokenId: string, known: TokenLimits | undefined): Promise<GatePass> {
    const limits = known ?? (await this.options.limits.find(tokenId)) ?? NO_LIMITS;
    const { slot, headers } = await this.gate(tokenId, limits);
    if (slot === undefined)
      return headers === undefined ? NO_SLOT : { headers, release: NO_SLOT.release };
    let released = false;
    return {
      headers: headers ?? {},
      release: async () => {
        if (released) return;
        released = true;
        await this.releaseSlot(slot);
      },
    };
  }

  async allowedModels(principal: Principal): Promise<readonly ModelId[] | undefined> {
    if (principal.tokenId === undefined) return undefined;
    return (await this.options.limits.find(principal.tokenId))?.allowedModels;
  }

  admit(admission: AdmissionRequest): Promise<AdmissionTicket> {
    const tokenId = admission.principal.tokenId;
    const remembered = tokenId === undefined ? undefined : this.options.limits.peek?.(tokenId);
    // A token whose limits are at hand and that has no quota reserves nothing: the ticket is
    // ready without the turns of the queue that looking the limits up again would take.
    if (remembered !== undefined && remembered.value?.imageQuota === undefined) {
      try {
        checkModelAllowed(remembered.value ?? NO_LIMITS, admission.request.model);
      } catch (error) {
        return Promise.reject(error);
      }
      return Promise.resolve(this.ticket(admission.principal, admission, undefined));
    }
    return this.admitReserving(admission);
  }

  private async admitReserving(admission: AdmissionRequest): Promise<AdmissionTicket> {
    const reservationId = await this.reserveFor(admission);
    if (reservationId !== undefined) this.reservations.hold(reservationId, reservationId);
    return this.ticket(admission.principal, admission, reservationId);
  }

  /**
   * An asynchronous task's admission at submission: the same checks and reservation as admit,
   * but the reservation outlives this request (the task store keeps it alive) until the node
   * that runs the task resumes it, or the task is canceled.
   */
  async reserveFor(admission: AdmissionRequest): Promise<string | undefined> {
    const { principal, request } = admission;
    const tokenId = principal.tokenId;
    if (tokenId === undefined) return undefined;
    const limits = (await this.options.limits.find(tokenId)) ?? NO_LIMITS;
    checkModelAllowed(limits, request.model);
    if (limits.imageQuota === undefined) return undefined;
    return this.reserve(tokenId, limits, admission.maxImages, abandonedRow(admission));
  }

  /**
   * The ticket of a task's reservation, on the node that runs it. A reservation that lapsed while
   * no node was alive to renew it (and was reclaimed) is taken again, or the task is refused as a
   * synchronous request would be.
   */
  async resume(
    admission: AdmissionRequest,
    reservationId: string | undefined,
  ): Promise<AdmissionTicket> {
    const { principal } = admission;
    const tokenId = principal.tokenId;
    if (reservationId === undefined || tokenId === undefined)
      return this.ticket(principal, admission, undefined);
    const expiresAt = this.options.now() + this.options.leaseTtlMs;
    if (!(await this.options.quota.extend(reservationId, expiresAt))) {
      const limits = (await this.options.limits.find(tokenId)) ?? NO_LIMITS;
      await this.reserve(
        tokenId,
        limits,
        admission.maxImages,
        abandonedRow(admission),
        reservationId,
      );
    }
    this.reservations.hold(reservationId, reservationId);
    return this.ticket(principal, admission, reservationId);
  }

  /** Frees a task's reservation without billing (a canceled or failed task). Never throws. */
  async releaseReserved(principal: Principal, reservationId: string | undefined): Promise<void> {
    await this.releaseReservation(principal, reservationId);
  }

  /**
   * An upload certificate's admission: the model allowed to the token, and one request counted
   * against its rate (a certificate holds nothing while it is used, so no concurrency slot).
   * Answers the token's limits and the rate headers for the answer; a limiter that fails lets
   * the request through, as at the gate.
   */
  async certify(
    tokenId: string,
    model: ModelId,
  ): Promise<{ limits: TokenLimits; headers: Record<string, string> }> {
    const limits = (await this.options.limits.find(tokenId)) ?? NO_LIMITS;
    checkModelAllowed(limits, model);
    if (limits.requestsPerMinute === undefined) return { limits, headers: {} };
    let decision: RateDecision;
    try {
      decision = await this.options.limiter.hit(`rpm:${tokenId}`, {
        limit: limits.requestsPerMinute,
        windowMs: MINUTE_MS,
      });
    } catch (error) {
      this.limiterFailed(error);
      return { limits, headers: {} };
    }
    return { limits, headers: rateAnswer(decision) };
  }

  async pendingTasksAllowed(principal: Principal): Promise<number | undefined> {
    if (principal.tokenId === undefined) return undefined;
    return (await this.options.limits.find(principal.tokenId))?.maxPendingTasks;
  }

  /** Stops renewing: whatever is still held expires after the lease. */
  async close(): Promise<void> {
    await Promise.all([this.reservations.stop(), this.slots.stop()]);
  }

  /** Renews every reservation and slot held now, as the heartbeat does. */
  async renewHeld(): Promise<void> {
    await Promise.all([this.reservations.beat(), this.slots.beat()]);
  }

  /**
   * Takes the request's concurrency slot and counts it against the token's rate, in one call to
   * the limiter; the slot held, if the token has a concurrency limit, and the rate's headers, if
   * it has a rate. A limiter that fails lets the request through (and is reported).
   */
  private async gate(
    tokenId: string,
    limits: TokenLimits,
  ): Promise<{ slot?: SlotHold; headers?: Record<string, string> }> {
    const slot =
      limits.maxConcurrent === undefined
        ? undefined
        : {
            hold: { key: `concurrency:${tokenId}`, holder: randomUUID() },
            limit: limits.maxConcurrent,
            ttlMs: this.options.leaseTtlMs,
          };
    const rate =
      limits.requestsPerMinute === undefined
        ? undefined
        : {
            key: `rpm:${tokenId}`,
            rule: { limit: limits.requestsPerMinute, windowMs: MINUTE_MS },
          };
    let decision: GateDecision;
    try {
      decision = await this.options.limiter.pass({ slot, rate });
    } catch (error) {
      this.limiterFailed(error);
      // A call that timed out may still run (the limiter busy, not gone): the slot it took would
      // be held by nobody until its lease ran out. Freeing it, by its holder, undoes that; sent
      // after the call on the same connection, it runs after it.
      if (slot !== undefined) void this.releaseSlot(slot.hold);
      return {};
    }
    if (decision.slot?.acquired === false) {
      throw new GatewayError(
        'Throttling.RateQuota',
        `this token allows ${limits.maxConcurrent} concurrent requests and all are in use; retry when one finishes`,
        slotHeaders(decision.slot),
      );
    }
    const headers = decision.rate === undefined ? undefined : rateAnswer(decision.rate);
    if (slot === undefined) return { headers };
    this.slots.hold(slot.hold.holder, slot.hold);
    return { slot: slot.hold, headers };
  }

  private async reserve(
    tokenId: string,
    limits: TokenLimits,
    images: number,
    abandoned: UsageRow,
    id: string = timeOrderedUuid(),
  ): Promise<string | undefined> {
    if (limits.imageQuota === undefined) return undefined;
    const reservation = { id, tokenId, images, abandonedRow: abandoned };
    const attempt = () => {
      const now = this.options.now();
      return this.options.quota.reserve(reservation, now, now + this.options.leaseTtlMs);
    };
    // Before refusing, free what dead nodes left behind for this token and try once more.
    const reserved =
      (await attempt()) ||
      ((await this.options.quota.reclaimExpired(this.options.now(), tokenId)) > 0 &&
        (await attempt()));
    if (!reserved) {
      throw new GatewayError(
        'Throttling.AllocationQuota',
        `this token's image quota cannot cover the ${images} image${images === 1 ? '' : 's'} this request may produce`,
      );
    }
    return reservation.id;
  }

  /**
   * Exactly one of settle or release takes effect. Settlement bills only under its fences (the
   * reservation, the Idempotency-Key claim, the caller's presence); when it bills nothing, the
   * ticket is ended all the same and the row says why.
   */
  private ticket(
    principal: Principal,
    admission: AdmissionRequest,
    reservationId: string | undefined,
  ): AdmissionTicket {
    const { labels, claim } = admission;
    const description = describeAdmitted(admission);
    const costOfImages = (images: number) => costOf(this.options.prices, description.model, images);
    let ended = false;
    /** Images handed over one by one so far (an incremental stream), and those of them billed. */
    let deliveredSoFar = 0;
    let billedSoFar = 0;
    return {
      settle: async (settlement: Settlement) => {
        if (ended) throw new Error('settle after the ticket ended');
        const settled = await this.settleHeld(
          principal,
          admission,
          reservationId,
          settlement,
          billedSoFar,
        );
        ended = true;
        return settled;
      },
      billDelivered: async (images: number) => {
        if (ended) throw new Error('billDelivered after the ticket ended');
        // Handed over already: delivered, whether or not the bill below goes through.
        deliveredSoFar += images;
        const billed = billedSoFar + images;
        let outcome: SettlementOutcome;
        try {
          outcome = await this.options.quota.billDelivered(
            principal.tokenId,
            {
              reservationId,
              idempotency: claim,
              standInRow: standInRowOf(
                labels,
                Object.assign(emptyOutcome(description), {
                  imagesDelivered: billed,
                  imagesBilled: billed,
                  costMicros: costOfImages(billed),
                }),
              ),
            },
            images,
          );
        } catch (error) {
          // The commit may have gone through with its answer lost: then the images are billed,
          // and delivered, as the stand-in row it wrote says.
          if (!(await this.billedDespite(labels.rowId, billed))) throw error;
          outcome = 'billed';
        }
        if (outcome !== 'billed') throw leaseLost();
        billedSoFar = billed;
      },
      release: async () => {
        if (!ended) {
          ended = true;
          await this.releaseReservation(principal, reservationId);
        }
        // What was billed one by one stays billed; only the rest was freed. An image handed over
        // whose bill then failed is delivered unbilled.
        return {
          imagesDelivered: deliveredSoFar,
          imagesBilled: billedSoFar,
          costMicros: costOfImages(billedSoFar),
        };
      },
    };
  }

  /**
   * Bills, publishes and records in one transaction: a billed request always has its ledger row.
   * When the transaction's fate is unknown (the connection broke around the commit), the row
   * tells: a request is delivered only when its billing is known to be durable.
   */
  private async settleHeld(
    principal: Principal,
    admission: AdmissionRequest,
    reservationId: string | undefined,
    settlement: Settlement,
    alreadyBilled: number,
  ): Promise<Settled> {
    const { labels, claim, task } = admission;
    const description = describeAdmitted(admission);
    const endedAt = this.options.now();
    const handedOver = settlement.handedOver === true;
    const delivered = settlement.imagesDelivered;
    const result =
      claim !== undefined || task !== undefined ? JSON.stringify(settlement.result) : '';
    const plan: SettlementPlan = {
      tokenId: principal.tokenId,
      reservationId,
      claim:
        claim === undefined
          ? undefined
          : Object.assign({}, claim, { requestId: labels.requestId, result }),
      task:
        task === undefined
          ? undefined
          : {
              id: task.id,
              runner: task.runner,
              result,
              endedAt,
              expiresAt: endedAt + task.resultTtlMs,
            },
      // Handed over: the caller has the images, whatever becomes of its connection.
      caller: handedOver ? undefined : settlement.caller,
      alreadyBilled,
      handedOver,
      row: usageRowOf(
        labels,
        {
          description,
          channel: settlement.channel,
          upstreamMs: settlement.upstreamMs,
          queueMs: settlement.queueMs,
          storageMs: settlement.storageMs,
          imagesReported: settlement.imagesReported,
          imagesReceived: settlement.imagesReceived ?? 0,
          imagesDelivered: delivered,
          imagesBilled: delivered,
          costMicros: costOf(this.options.prices, description.model, delivered),
          outputSize: `${settlement.width}*${settlement.height}`,
        },
        { status: 200, code: undefined, endedAt },
      ),
      imageCostMicros: costOf(this.options.prices, description.model, 1),
    };
    if (reservationId !== undefined) this.reservations.drop(reservationId);
    try {
      return await this.options.quota.settle(plan);
    } catch (error) {
      if (await this.settledDespite(labels.rowId))
        return { outcome: 'billed', row: settledRow(plan, 'billed', this.options.now()) };
      if (reservationId !== undefined) this.reservations.hold(reservationId, reservationId);
      // The statement may have reached the server, which can still commit it once it answers
      // again (a frozen or overloaded database): the caller is not told that nothing was billed.
      if (isDatabaseUnavailable(error)) throw billingUnconfirmed(error);
      throw error;
    }
  }

  /** After a settlement failed: whether its transaction committed all the same. */
  private async settledDespite(rowId: string): Promise<boolean> {
    try {
      return await this.options.quota.isBilled(rowId);
    } catch {
      return false;
    }
  }

  /**
   * After a partial bill failed: whether it committed all the same, its stand-in row counting
   * `billed` images.
   */
  private async billedDespite(rowId: string, billed: number): Promise<boolean> {
    try {
      return (await this.options.quota.billedOnStandIn(rowId)) >= billed;
    } catch {
      return false;
    }
  }

  /** Never throws: a reservation it cannot free is reclaimed once its lease expires. */
  private async releaseReservation(
    principal: Principal,
    reservationId: string | undefined,
  ): Promise<void> {
    if (reservationId === undefined || principal.tokenId === undefined) return;
    this.reservations.drop(reservationId);
    try {
      await this.options.quota.release(reservationId, principal.tokenId);
    } catch (error) {
      this.options.log.warn(
        { err: String(error), reservationId },
        'releasing a quota reservation failed; it will be reclaimed when it expires',
      );
    }
  }

  /** Never throws: a slot it cannot free expires with its lease. */
  private async releaseSlot(hold: SlotHold): Promise<void> {
    this.slots.drop(hold.holder);
    try {
      await this.options.limiter.releaseSlot(hold);
    } catch (error) {
      this.limiterFailed(error);
    }
  }

  private limiterFailed(error: unknown): void {
    this.warnLimiter(
      { err: error instanceof Error ? error.message : String(error) },
      'rate limiter unavailable: rate and concurrency limits are not enforced',
    );
  }
}

function billingUnconfirmed(cause: unknown): GatewayError {
  const error = new GatewayError(
    'Overloaded',
    "the gateway's database did not confirm this request's billing in time, so its images were not delivered; the database may still complete it and bill it: retry with the same Idempotency-Key to receive those images without paying twice",
    { 'Retry-After': String(DATABASE_RETRY_AFTER_S) },
  );
  error.cause = cause;
  return error;
}

/** What an admitted request asked for, as its rows describe it. */
function describeAdmitted(admission: AdmissionRequest): RequestDescription {
  return {
    model: admission.request.model,
    mode: admission.request.mode,
    imagesRequested: admission.maxImages,
  };
}

/** The row a reclaimed reservation leaves: nothing produced, nothing billed, no answer sent. */
function abandonedRow(admission: AdmissionRequest): UsageRow {
  return standInRowOf(admission.labels, emptyOutcome(describeAdmitted(admission)));
}

/** The rate headers of an allowed request; a refused one throws 429 with them. */
function rateAnswer(decision: RateDecision): Record<string, string> {
  const headers = rateHeaders(decision);
  if (!decision.allowed)
    throw new GatewayError(
      'Throttling.RateQuota',
      `this token allows ${decision.limit} requests per minute; retry after ${headers['Retry-After']} s`,
      headers,
    );
  return headers;
}

/** A token limited to some models refuses the others, as its key would. */
function checkModelAllowed(limits: TokenLimits, model: ModelId): void {
  if (limits.allowedModels !== undefined && !limits.allowedModels.includes(model))
    throw new GatewayError('InvalidApiKey', `this token may not use model ${model}`);
}
