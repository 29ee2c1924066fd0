import type { TokenLimits } from '../domain/token-limits.js';

export interface LimitsSource {
  find(tokenId: string): Promise<TokenLimits | undefined>;
}

interface Entry {
  limits: TokenLimits | undefined;
  fetchedAt: number;
}

/**
 * Token limits remembered for `ttlMs`, like token rows (IMAGEGATE_TOKEN_CACHE_MS): a change made
 * with `token update` takes effect on every node within that time. Bounded in size.
 */
export class CachedLimits implements LimitsSource {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly source: LimitsSource,
    private readonly ttlMs: number,
    private readonly now: () => number,
    private readonly capacity = 10_000,
  ) {}

  async find(tokenId: string): Promise<TokenLimits | undefined> {
    const cached = this.entries.get(tokenId);
    if (cached !== undefined && this.now() - cached.fetchedAt < this.ttlMs) return cached.limits;
    const limits = await this.source.find(tokenId);
    if (this.ttlMs > 0) {
      this.entries.delete(tokenId);
      if (this.entries.size >= this.capacity) {
        const oldest = this.entries.keys().next();
        if (oldest.done !== true) this.entries.delete(oldest.value);
      }
      this.entries.set(tokenId, { limits, fetchedAt: this.now() });
    }
    return limits;
  }
}
