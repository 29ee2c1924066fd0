import type { TokenLimits } from '../domain/token-limits.js';

/**
 * A token's limits by token id. Admission reads them through a TtlCache of
 * IMAGEGATE_TOKEN_CACHE_MS, like token rows: a change made with `token update` takes effect on
 * every node within that time.
 */
export interface LimitsSource {
  find(tokenId: string): Promise<TokenLimits | undefined>;
  /** The limits at once when they are remembered (a TtlCache); absent: every lookup waits. */
  peek?(tokenId: string): { value: TokenLimits | undefined } | undefined;
}
