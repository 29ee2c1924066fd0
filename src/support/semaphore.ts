/** At most `limit` holders at once; the others wait in arrival order. */
export class Semaphore {
  private held = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly limit: number) {}

  /** Places taken now. */
  get holders(): number {
    return this.held;
  }

  /** Callers waiting for a place now. */
  get waiters(): number {
    return this.waiting.length;
  }

  /** Runs `task` once a place is free; a caller that gives up while waiting frees its turn. */
  async run<T>(task: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    await this.acquire(signal);
    try {
      return await task();
    } finally {
      this.release();
    }
  }

  private acquire(signal: AbortSignal | undefined): Promise<void> {
    signal?.throwIfAborted();
    if (this.held < this.limit) {
      this.held++;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const turn = () => {
        signal?.removeEventListener('abort', giveUp);
        this.held++;
        resolve();
      };
      const giveUp = () => {
        const index = this.waiting.indexOf(turn);
        if (index >= 0) this.waiting.splice(index, 1);
        reject(signal?.reason instanceof Error ? signal.reason : new Error('aborted'));
      };
      this.waiting.push(turn);
      signal?.addEventListener('abort', giveUp, { once: true });
    });
  }

  private release(): void {
    this.held--;
    this.waiting.shift()?.();
  }
}
