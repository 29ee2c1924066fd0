import { isModelId, type ModelId } from './models.js';

/** What a token may do. Undefined means no limit. */
export interface TokenLimits {
  /** Total images the token may ever produce. */
  imageQuota: number | undefined;
  requestsPerMinute: number | undefined;
  maxConcurrent: number | undefined;
  /** The models the token may use; undefined allows every model. */
  allowedModels: readonly ModelId[] | undefined;
}

export const NO_LIMITS: TokenLimits = {
  imageQuota: undefined,
  requestsPerMinute: undefined,
  maxConcurrent: undefined,
  allowedModels: undefined,
};

/** A change to a token's limits: undefined leaves a limit as it is, null removes it. */
export interface TokenLimitChanges {
  imageQuota?: number | null;
  requestsPerMinute?: number | null;
  maxConcurrent?: number | null;
  allowedModels?: readonly ModelId[] | null;
  /** Milliseconds since the epoch; null: never expires. */
  expiresAt?: number | null;
}

/** A token's quota as it stands: settled images and images held by running requests. */
export interface QuotaStanding {
  imageQuota: number | undefined;
  imagesUsed: number;
  imagesReserved: number;
}

export function encodeModels(models: readonly ModelId[] | null | undefined): string | null {
  return models === null || models === undefined ? null : models.join(',');
}

export function decodeModels(text: string | null): ModelId[] | undefined {
  if (text === null) return undefined;
  return text.split(',').filter(isModelId);
}
