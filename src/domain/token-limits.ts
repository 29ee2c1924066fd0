import { isModelId, type ModelId } from './models.js';

/**
 * What a token may do. Undefined means no limit, except for the bounds every token has (pending
 * tasks, uploads), where it means the deployment's setting.
 */
export interface TokenLimits {
  /** Total images the token may ever produce. */
  imageQuota: number | undefined;
  requestsPerMinute: number | undefined;
  maxConcurrent: number | undefined;
  /** The models the token may use; undefined allows every model. */
  allowedModels: readonly ModelId[] | undefined;
  /** PENDING tasks the token may have at once; undefined: IMAGEGATE_TASK_QUEUE_LIMIT_PER_TOKEN. */
  maxPendingTasks: number | undefined;
  /** MiB the token may upload per upload window; undefined: IMAGEGATE_UPLOAD_MB_PER_TOKEN. */
  uploadMbPerWindow: number | undefined;
  /** Files the token may upload per upload window; undefined: IMAGEGATE_UPLOAD_FILES_PER_TOKEN. */
  uploadFilesPerWindow: number | undefined;
}

export const NO_LIMITS: TokenLimits = {
  imageQuota: undefined,
  requestsPerMinute: undefined,
  maxConcurrent: undefined,
  allowedModels: undefined,
  maxPendingTasks: undefined,
  uploadMbPerWindow: undefined,
  uploadFilesPerWindow: undefined,
};

/** A change to a token's limits: undefined leaves a limit as it is, null removes it. */
export interface TokenLimitChanges {
  imageQuota?: number | null;
  requestsPerMinute?: number | null;
  maxConcurrent?: number | null;
  allowedModels?: readonly ModelId[] | null;
  /** null: back to the deployment's setting, as for the two below. */
  maxPendingTasks?: number | null;
  uploadMbPerWindow?: number | null;
  uploadFilesPerWindow?: number | null;
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
