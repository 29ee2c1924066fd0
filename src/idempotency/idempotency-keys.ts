import { randomUUID } from 'node:crypto';
import type { Log } from '../support/log.js';
import { purgeInBatches } from '../support/batched-purge.js';
import { Heartbeat } from '../support/heartbeat.js';
import { GatewayError, invalidParameter } from '../errors/gateway-error.js';
import type {
  IdempotencyClaimRow,
  IdempotencyRecord,
  StoredOutcome,
} from '../store/idempotency-store.js';

export type { StoredOutcome, StoredResponse } from '../store/idempotency-store.js';

export const IDEMPOTENCY_HEADER = 'Idempotency-Key';
/** How long a key is remembered: a repeat within this time replays the first result. */
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;

const FIRST_POLL_MS = 50;
const MAX_POLL_MS = 1000;

/** The idempotency operations the coordinator needs; SqlIdempotencyStore provides them. */
export interface IdempotencyBook {
  claim(row: IdempotencyClaimRow): Promise<boolean>;
  find(scope: string, key: string): Promise<IdempotencyRecord | undefined>;
  takeOver(
    scope: string,
    key: string,
    owner: string,
    requestId: string,
    now: number,
    leaseUntil: number,
  ): Promise<boolean>;
  renew(owners: readonly string[], leaseUntil: number): Promise<void>;
  abandon(scope: string, key: string, owner: string): Promise<void>;
  deleteExpiredKey(now: number, scope: string, key: string): Promise<void>;
  /** Deletes at most `limit` expired keys; returns how many went. */
  deleteExpired(now: number, limit: number): Promise<number>;
}

/** Names a claim in the store: what the settlement checks is still this request's. */
export interface ClaimKey {
  scope: string;
  key: string;
  owner: string;
}

/**
 * The right to run a request under a key. The settlement that bills the request publishes its
 * result under the key in the same transaction (and only while the claim is still this
 * request's); every other end calls `finish`, which forgets a key left unpublished so that a
 * repeat runs again.
 */
export interface IdempotencyClaim {
  readonly fence: ClaimKey;
  finish(): Promise<void>;
}

export type IdempotencyStart =
  { kind: 'run'; claim: IdempotencyClaim } | { kind: 'replay'; outcome: StoredOutcome };

export interface IdempotentRequest {
  /** Keys are separate per token (or per account for an external token without an id). */
  scope: string;
  key: string;
  fingerprint: string;
  requestId: string;
  /** Stops the wait for a first request still running when the caller goes away. */
  signal: AbortSignal;
}

const VISIBLE_ASCII = /^[\x21-\x7e]{1,255}$/;

/** Checks an Idempotency-Key header value: 1 to 255 visible ASCII characters. */
export function checkIdempotencyKey(value: string | string[] | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !VISIBLE_ASCII.test(value))
    throw invalidParameter(
      IDEMPOTENCY_HEADER,
      'must be one header of 1 to 255 visible ASCII characters',
    );
  return value;
}

/**
 * Idempotency-Key handling across nodes. The first request with a key claims it in the database
 * and runs; a repeat with the same body replays the stored response, or, while the first still
 * runs, polls until it has one. A claim is a lease renewed while its request runs: if its node
 * dies, a waiting repeat takes it over and runs the request itself. Only billed results are
 * remembered, published by the settlement that billed them while the claim is still its own;
 * after a failure the key is free again, as nothing was billed.
 */
export class IdempotencyKeys {
  private readonly leases: Heartbeat<string>;

  constructor(
    private readonly book: IdempotencyBook,
    private readonly leaseTtlMs: number,
    private readonly now: () => number,
    private readonly log: Log,
  ) {
    this.leases = new Heartbeat(
      Math.max(1, Math.floor(leaseTtlMs / 3)),
      (owners) => book.renew(owners, this.now() + leaseTtlMs),
      (error) => log.warn({ err: String(error) }, 'renewing idempotency claims failed'),
    );
  }

  async start(request: IdempotentRequest): Promise<IdempotencyStart> {
    const owner = `${request.requestId}/${randomUUID()}`;
    let pollMs = FIRST_POLL_MS;
    for (;;) {
      const now = this.now();
      const claimed = await this.book.claim({
        scope: request.scope,
        key: request.key,
        fingerprint: request.fingerprint,
        owner,
        requestId: request.requestId,
        now,
        leaseUntil: now + this.leaseTtlMs,
        expiresAt: now + IDEMPOTENCY_WINDOW_MS,
      });
      if (claimed) return { kind: 'run', claim: this.claimFor(request, owner) };

      const existing = await this.book.find(request.scope, request.key);
      if (existing === undefined) continue;
      if (existing.expires_at <= now) {
        await this.book.deleteExpiredKey(now, request.scope, request.key);
        continue;
      }
      if (existing.fingerprint !== request.fingerprint) {
        throw invalidParameter(
          IDEMPOTENCY_HEADER,
          'was already used with a different request body; use a new key for a new request',
        );
      }
      if (existing.outcome !== undefined) return { kind: 'replay', outcome: existing.outcome };
      if (
        existing.lease_until <= now &&
        (await this.book.takeOver(
          request.scope,
          request.key,
          owner,
          request.requestId,
          now,
          now + this.leaseTtlMs,
        ))
      ) {
        return { kind: 'run', claim: this.claimFor(request, owner) };
      }
      await this.waitOrGiveUp(pollMs, request.signal);
      pollMs = Math.min(pollMs * 2, MAX_POLL_MS);
    }
  }

  /** Forgets keys older than the 24-hour window, a batch at a time. */
  async purgeExpired(batchSize?: number): Promise<number> {
    const now = this.now();
    return purgeInBatches((limit) => this.book.deleteExpired(now, limit), batchSize);
  }

  async close(): Promise<void> {
    await this.leases.stop();
  }

  private claimFor(request: IdempotentRequest, owner: string): IdempotencyClaim {
    this.leases.hold(owner, owner);
    let finished = false;
    return {
      fence: { scope: request.scope, key: request.key, owner },
      finish: async () => {
        if (finished) return;
        finished = true;
        this.leases.drop(owner);
        try {
          // Only a claim still running is deleted: a published one stays for its repeats.
          await this.book.abandon(request.scope, request.key, owner);
        } catch (error) {
          // The claim then lapses with its lease, and a repeat runs the request again.
          this.log.warn(
            { err: String(error), key: request.key },
            'releasing an idempotency key failed',
          );
        }
      },
    };
  }

  private async waitOrGiveUp(ms: number, signal: AbortSignal): Promise<void> {
    try {
      await pause(ms, signal);
    } catch {
      throw new GatewayError(
        'InvalidParameter',
        `${IDEMPOTENCY_HEADER}: the caller went away while the first request with this key was running`,
      );
    }
  }
}

/**
 * Resolves after `ms`, or rejects once `signal` aborts. Built on the global timer functions rather
 * than node:timers/promises because, under ESM on Node 20, only the globals are replaced by
 * node:test's mock timers, which the tests of this polling move by hand.
 */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const stopWaiting = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', stopWaiting);
      resolve();
    }, ms);
    signal.addEventListener('abort', stopWaiting, { once: true });
  });
}
