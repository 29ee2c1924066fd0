import { CallerGone } from '../errors/caller-gone.js';
import { type Cancellation, CancellationSource } from '../support/cancellation.js';

/**
 * An attempt's time: the channel's `timeout_ms`, cut short by the routing deadline. It runs from
 * the attempt's start, except while the attempt waits in the gateway's own queue: then only the
 * routing deadline applies, and the time-out counts afresh from the end of the wait.
 */
export class AttemptClock {
  private readonly halted = new CancellationSource();
  private readonly expiry = new CancellationSource();
  private timer: NodeJS.Timeout | undefined;
  /** The time-out as last started. */
  limitMs = 0;
  private readonly callerAborted = () => this.follow(this.caller.reason);
  private readonly haltedNow = () => this.expiry.abort(this.halted.reason);

  constructor(
    private readonly timeoutMs: number,
    private readonly deadlineAt: number,
    private readonly now: () => number,
    private readonly monotonicNow: () => number,
    /** The caller's signal, followed by the attempt's (AbortSignal.any costs far more per call). */
    private readonly caller: Cancellation,
    /** True when the caller's departure stops the upstream's work too (the gateway drains). */
    private readonly departureStops: () => boolean,
  ) {
    this.halted.addEventListener('abort', this.haltedNow);
    if (caller.aborted) this.follow(caller.reason);
    // Without `once` (an AbortSignal caller would pay more for it): end() removes it anyway.
    else caller.addEventListener('abort', this.callerAborted);
    this.start();
  }

  /** Aborted when the caller's signal is, or when the attempt's time runs out. */
  get signal(): Cancellation {
    return this.expiry;
  }

  /**
   * Aborted when the attempt's time runs out, or when the job's signal is aborted for any reason
   * but its caller's departure (a task's runner stopping, say): not when the caller leaves,
   * unless the gateway drains.
   */
  get stopped(): Cancellation {
    return this.halted;
  }

  private follow(reason: unknown): void {
    if (!(reason instanceof CallerGone) || this.departureStops()) this.halted.abort(reason);
    this.expiry.abort(reason);
  }

  /** Time spent waiting in the gateway's own queue, off the clock. */
  queueMs = 0;

  async stoppedDuring<T>(wait: () => Promise<T>): Promise<T> {
    this.stop();
    const waitStarted = this.monotonicNow();
    const untilDeadline = this.deadlineAt - this.now();
    this.timer = setTimeout(
      () => this.halted.abort(new Error('routing deadline reached while waiting for a turn')),
      untilDeadline,
    );
    try {
      return await wait();
    } finally {
      this.queueMs += this.monotonicNow() - waitStarted;
      this.start();
    }
  }

  stop(): void {
    clearTimeout(this.timer);
  }

  /** The attempt is over: nothing of it is left listening. */
  end(): void {
    this.stop();
    this.caller.removeEventListener('abort', this.callerAborted);
  }

  private start(): void {
    this.stop();
    const limitMs = Math.min(this.timeoutMs, this.deadlineAt - this.now());
    this.limitMs = limitMs;
    this.timer = setTimeout(
      () => this.halted.abort(new Error(`attempt timed out after ${limitMs} ms`)),
      limitMs,
    );
  }
}
