import type { BreakerSettings } from '../config/channel-config.js';

export type BreakerState = 'closed' | 'open' | 'half-open';

/**
 * Per-channel circuit breaker. Closed: every attempt passes. After `failureThreshold` failures
 * in a row it opens and refuses attempts; after `cooldownMs` it half-opens and lets one trial
 * through: success closes it, failure opens it again for another cool-down.
 */
export class CircuitBreaker {
  private consecutiveFailures = 0;
  private openedAt: number | undefined;
  private trialInFlight = false;

  constructor(
    private readonly settings: BreakerSettings,
    private readonly now: () => number,
  ) {}

  state(): BreakerState {
    if (this.openedAt === undefined) return 'closed';
    return this.now() - this.openedAt >= this.settings.cooldownMs ? 'half-open' : 'open';
  }

  failures(): number {
    return this.consecutiveFailures;
  }

  /** When an open circuit lets its next trial through; undefined unless open. */
  reopensAt(): number | undefined {
    return this.state() === 'open' && this.openedAt !== undefined
      ? this.openedAt + this.settings.cooldownMs
      : undefined;
  }

  /**
   * Asks to make an attempt. True means go ahead and report the outcome with exactly one of
   * `succeeded`, `failed` or `released`.
   */
  tryAcquire(): boolean {
    switch (this.state()) {
      case 'closed':
        return true;
      case 'open':
        return false;
      case 'half-open':
        if (this.trialInFlight) return false;
        this.trialInFlight = true;
        return true;
    }
  }

  succeeded(): void {
    this.consecutiveFailures = 0;
    this.openedAt = undefined;
    this.trialInFlight = false;
  }

  failed(): void {
    this.consecutiveFailures += 1;
    const trial = this.trialInFlight;
    this.trialInFlight = false;
    if (trial || this.consecutiveFailures >= this.settings.failureThreshold)
      this.openedAt = this.now();
  }

  /** The attempt says nothing about the channel's health (the caller left, say). */
  released(): void {
    this.trialInFlight = false;
  }
}
