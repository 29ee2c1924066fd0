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

  /**
   * Takes a place for a request declaring `bodyBytes`; undefined (nothing taken) when over a cap.
   */
  tryEnter(bodyBytes: number): InFlightPlace | undefined {
    if (this.requestCount >= this.maxRequests) return undefined;
    if (bodyBytes > 0 && this.bodyByteCount + bodyBytes > this.maxBodyBytes) return undefined;
    this.requestCount++;
    this.gauges?.requests.inc();
    this.addBodyBytes(bodyBytes);
    return new InFlightPlace(this, bodyBytes);
  }

  /** Counts `bytes` more if they fit under the cap; false (nothing counted) when they do not. */
  tryAddBodyBytes(bytes: number): boolean {
    if (this.bodyByteCount + bytes > this.maxBodyBytes) return false;
    this.addBodyBytes(bytes);
    return true;
  }

  /** Gives back a place taken by `tryEnter` and the body bytes it came to hold. */
  release(bodyBytes: number): void {
    this.requestCount--;
    this.gauges?.requests.dec();
    this.addBodyBytes(-bodyBytes);
  }

  private addBodyBytes(bytes: number): void {
    this.bodyByteCount += bytes;
    this.gauges?.bodyBytes.inc(bytes);
  }
}

/**
 * One request's place in the budget, with the body bytes it holds. It is given back exactly once,
 * however often `leave` is called; bytes that arrive after that are no longer this request's to
 * hold (they are dropped unread), so they are not counted.
 */
export class InFlightPlace {
  private heldBytes: number;
  private left = false;

  constructor(
    private readonly budget: InFlightBudget,
    declaredBytes: number,
  ) {
    this.heldBytes = declaredBytes;
  }

  /** Counts bytes of a body that declared no length as they arrive; false when over the cap. */
  tryAddBodyBytes(bytes: number): boolean {
    if (this.left) return true;
    if (!this.budget.tryAddBodyBytes(bytes)) return false;
    this.heldBytes += bytes;
    return true;
  }

  leave(): void {
    if (this.left) return;
    this.left = true;
    this.budget.release(this.heldBytes);
  }
}
