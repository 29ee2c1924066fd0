import type { BreakerSettings } from '../config/channel-config.js';
import { CircuitBreaker } from './circuit-breaker.js';

export interface FailureRecord {
  at: number;
  detail: string;
}

/** A channel's running health: its breaker, whether its key was rejected, and counters. */
export class ChannelHealth {
  readonly breaker: CircuitBreaker;
  attempts = 0;
  successes = 0;
  failures = 0;
  inFlight = 0;
  lastSuccessAt: number | undefined;
  lastLatencyMs: number | undefined;
  lastFailure: FailureRecord | undefined;
  /** Set when the upstream refused the channel's key (401/403): out until a config reload. */
  keyRejected: FailureRecord | undefined;

  constructor(
    settings: BreakerSettings,
    private readonly now: () => number,
  ) {
    this.breaker = new CircuitBreaker(settings, now);
  }

  started(): void {
    this.attempts += 1;
    this.inFlight += 1;
  }

  finished(): void {
    this.inFlight -= 1;
  }

  succeeded(latencyMs: number): void {
    this.successes += 1;
    this.lastSuccessAt = this.now();
    this.lastLatencyMs = latencyMs;
  }

  failed(detail: string): void {
    this.failures += 1;
    this.lastFailure = { at: this.now(), detail };
  }

  takeOut(detail: string): void {
    this.failed(detail);
    this.keyRejected = { at: this.now(), detail };
  }

  /** A reload kept this channel: a reload is how an operator says its key was fixed. */
  restore(): void {
    this.keyRejected = undefined;
  }
}
