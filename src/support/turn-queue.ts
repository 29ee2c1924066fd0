export interface TurnLimits {
  /** Jobs that hold a turn at once. */
  running: number;
  /** Jobs that may wait for a turn; one more is refused. */
  waiting: number;
  /** The error a job gets when every turn is taken and the queue is full (503 Overloaded, say). */
  refusal: () => Error;
}

/** A held turn; giving it back more than once is harmless. */
export interface Turn {
  release(): void;
}

interface Waiter {
  grant(turn: Turn): void;
  refuse(reason: unknown): void;
}

/**
 * Turns to run jobs, given in arrival order. A job that finds every turn taken and the queue
 * full is refused at once, rather than waiting longer than its caller would.
 */
export class TurnQueue {
  private held = 0;
  private readonly waiters: Waiter[] = [];

  constructor(private readonly limits: TurnLimits) {
    if (!Number.isInteger(limits.running) || limits.running < 1) {
      throw new RangeError(`running must be a whole number of at least 1, got ${limits.running}`);
    }
    if (!Number.isInteger(limits.waiting) || limits.waiting < 0) {
      throw new RangeError(`the queue limit must be a whole number, got ${limits.waiting}`);
    }
  }

  /** Jobs holding a turn now. */
  get running(): number {
    return this.held;
  }

  /** Jobs waiting for a turn now. */
  get waiting(): number {
    return this.waiters.length;
  }

  /**
   * A turn, once one is free. Rejects at once with the limits' refusal when the queue is full,
   * and with the signal's reason if it aborts before the turn comes.
   */
  take(signal?: AbortSignal): Promise<Turn> {
    if (signal?.aborted === true) return Promise.reject(signal.reason as Error);
    if (this.held < this.limits.running) return Promise.resolve(this.grant());
    if (this.waiters.length >= this.limits.waiting) return Promise.reject(this.limits.refusal());
    return new Promise<Turn>((resolve, reject) => {
      const leave = () => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        reject(signal?.reason as Error);
      };
      const waiter: Waiter = {
        grant: (turn) => {
          signal?.removeEventListener('abort', leave);
          resolve(turn);
        },
        refuse: (reason) => {
          signal?.removeEventListener('abort', leave);
          reject(reason);
        },
      };
      signal?.addEventListener('abort', leave, { once: true });
      this.waiters.push(waiter);
    });
  }

  /** Refuses every waiting job with `reason`; those holding a turn finish. */
  refuseWaiting(reason: Error): void {
    for (const waiter of this.waiters.splice(0)) waiter.refuse(reason);
  }

  private grant(): Turn {
    this.held += 1;
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.held -= 1;
        this.waiters.shift()?.grant(this.grant());
      },
    };
  }
}
