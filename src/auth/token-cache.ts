import type { TokenRecord, TokenStore } from '../store/token-store.js';

interface Entry {
  record: TokenRecord | undefined;
  fetchedAt: number;
}

/**
 * Remembers token rows for `ttlMs` so that the hot path does not query the database on every
 * request. Bounded: the oldest entries go first once `capacity` is reached.
 */
export class TokenCache {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly store: TokenStore,
    private readonly ttlMs: number,
    private readonly now: () => number,
    private readonly capacity = 10_000,
  ) {}

  async get(id: string): Promise<TokenRecord | undefined> {
    const cached = this.entries.get(id);
    if (cached !== undefined && this.now() - cached.fetchedAt < this.ttlMs) return cached.record;
    const record = await this.store.find(id);
    if (this.ttlMs > 0) {
      this.entries.delete(id);
      if (this.entries.size >= this.capacity) {
        const oldest = this.entries.keys().next();
        if (oldest.done !== true) this.entries.delete(oldest.value);
      }
      this.entries.set(id, { record, fetchedAt: this.now() });
    }
    return record;
  }

  forget(id: string): void {
    this.entries.delete(id);
  }
}
