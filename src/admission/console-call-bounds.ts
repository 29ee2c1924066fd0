import { GatewayError } from '../errors/gateway-error.js';
import { type Log, warnAtMostEvery } from '../support/log.js';
import { PerKeySlots } from '../support/per-key-slots.js';
import { rateHeaders } from './rate-headers.js';
import type { RateDecision, RateLimiter } from './rate-limiter.js';

const MINUTE_MS = 60_000;
const LIMITER_REPORT_EVERY_MS = 10_000;

/**
 * Previews one caller may have fetching at once on one node: a preview holds one of the node's
 * image fetches (IMAGEGATE_MAX_IMAGE_FETCHES) for up to the fetch time-out, and generations need
 * them too.
 */
export const PREVIEWS_AT_ONCE = 2;

export interface ConsoleCallBoundsOptions {
  limiter: RateLimiter;
  /** IMAGEGATE_CONSOLE_CALLS_PER_MINUTE: validations and previews one caller may ask a minute. */
  callsPerMinute: number;
  log: Log;
}

/**
 * Bounds on the console's helper calls (POST /console/api/validate and /console/api/preview):
 * they bill nothing but spend the gateway's CPU and image fetches, so each caller gets an
 * allowance of its own, apart from its token's request rate (typing in the playground must not
 * use up the requests it generates with), counted by the same limiter as that rate (shared by
 * every node when Redis is configured), and at most PREVIEWS_AT_ONCE previews under way on a
 * node. A limiter that fails lets the call through, as the request rate does.
 */
export class ConsoleCallBounds {
  private readonly previews = new PerKeySlots(PREVIEWS_AT_ONCE);
  private readonly warnLimiter: (fields: object, message: string) => void;

  constructor(private readonly options: ConsoleCallBoundsOptions) {
    this.warnLimiter = warnAtMostEvery(options.log, LIMITER_REPORT_EVERY_MS);
  }

  /**
   * Counts one call of `caller` against its allowance: answers the rate headers for the answer,
   * or throws 429 Throttling.RateQuota with Retry-After past it.
   */
  async count(caller: string): Promise<Record<string, string>> {
    const limit = this.options.callsPerMinute;
    let decision: RateDecision;
    try {
      decision = await this.options.limiter.hit(`console:${caller}`, {
        limit,
        windowMs: MINUTE_MS,
      });
    } catch (error) {
      this.warnLimiter(
        { err: error instanceof Error ? error.message : String(error) },
        'rate limiter unavailable: the console calls allowance is not enforced',
      );
      return {};
    }
    const headers = rateHeaders(decision);
    if (!decision.allowed)
      throw new GatewayError(
        'Throttling.RateQuota',
        `this token may make ${limit} console calls (validations and image previews) a minute; retry after ${headers['Retry-After']} s`,
        headers,
      );
    return headers;
  }

  /**
   * A place among `caller`'s previews under way on this node, to be released when its fetch ends;
   * throws 429 Throttling.RateQuota when it holds all of them.
   */
  takePreview(caller: string): () => void {
    const release = this.previews.tryTake(caller);
    if (release === undefined)
      throw new GatewayError(
        'Throttling.RateQuota',
        `this token may have ${PREVIEWS_AT_ONCE} image previews under way at once; retry when one ends`,
        { 'Retry-After': '1' },
      );
    return release;
  }
}
