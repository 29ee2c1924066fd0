import type { LevelGauge } from '../metrics/level-gauge.js';

/**
 * How much the gateway holds at once: requests being served and bytes of request bodies being
 * received or held. Past either cap a new request is refused before its body is read, which
 * keeps memory bounded however many large requests arrive together.
 */
export class InFlightBudget {
  private requestCount = 0;
  private bodyByteCount = 0;

  constructor(
    readonly maxRequests: number,
    readonly maxBodyBytes: number,
    private readonly gauges?: { requests: LevelGauge; bodyBytes: LevelGauge },
  ) {}

  get requests(): number {
    return this.requestCount;
  }

  get bodyBytes(): number {
    return this.bodyByteCount;
  }

  /** Takes a place for a request declaring `bodyBytes`; false (nothing taken) when over a cap. */
  tryEnter(bodyBytes: number): boolean {
    if (this.requestCount >= this.maxRequests) return false;
    if (bodyBytes > 0 && this.bodyByteCount + bodyBytes > this.maxBodyBytes) return false;
    this.requestCount++;
    this.bodyByteCount += bodyBytes;
    this.gauges?.requests.inc();
    this.gauges?.bodyBytes.inc(bodyBytes);
    return true;
  }

  /** Counts bytes of a body that declared no length as they arrive; false when over the cap. */
  tryAddBodyBytes(bytes: number): boolean {
    if (this.bodyByteCount + bytes > this.maxBodyBytes) return false;
    this.bodyByteCount += bytes;
    this.gauges?.bodyBytes.inc(bytes);
    return true;
  }

  leave(bodyBytes: number): void {
    this.requestCount--;
    this.bodyByteCount -= bodyBytes;
    this.gauges?.requests.dec();
    this.gauges?.bodyBytes.dec(bodyBytes);
  }
}
