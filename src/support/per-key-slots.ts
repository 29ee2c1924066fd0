/**
 * At most `limit` holders per key at once, in this process. A key holds memory only while it has
 * holders, so a flood of distinct keys leaves nothing behind.
 */
export class PerKeySlots {
  private readonly held = new Map<string, number>();

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1)
      throw new RangeError(`the limit must be a whole number of at least 1, got ${limit}`);
  }

  /** A slot's release (harmless to call again), or undefined when the key holds all of its slots. */
  tryTake(key: string): (() => void) | undefined {
    const count = this.held.get(key) ?? 0;
    if (count >= this.limit) return undefined;
    this.held.set(key, count + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.held.get(key) ?? 1) - 1;
      if (left === 0) this.held.delete(key);
      else this.held.set(key, left);
    };
  }

  /** Keys that hold a slot now. */
  get keys(): number {
    return this.held.size;
  }
}
