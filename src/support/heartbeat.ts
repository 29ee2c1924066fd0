/**
 * Renews the leases a node holds (quota reservations, concurrency slots, idempotency claims) at a
 * fixed interval, so they outlive long requests yet expire soon after the node dies.
 */
export class Heartbeat<T> {
  private readonly held = new Map<string, T>();
  private readonly timer: NodeJS.Timeout;
  private beating: Promise<void> = Promise.resolve();

  constructor(
    intervalMs: number,
    private readonly renew: (held: T[]) => Promise<void>,
    private readonly onError: (error: unknown) => void,
  ) {
    this.timer = setInterval(() => void this.beat(), intervalMs);
    this.timer.unref();
  }

  hold(id: string, value: T): void {
    this.held.set(id, value);
  }

  drop(id: string): void {
    this.held.delete(id);
  }

  get size(): number {
    return this.held.size;
  }

  /** Renews everything held now; a beat still running is waited for, never overlapped. */
  beat(): Promise<void> {
    this.beating = this.beating.then(async () => {
      if (this.held.size === 0) return;
      try {
        await this.renew([...this.held.values()]);
      } catch (error) {
        this.onError(error);
      }
    });
    return this.beating;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.beating;
  }
}
