import { parseDuration } from '../support/duration.js';
import type { QuotaStanding, TokenLimitChanges, TokenLimits } from '../domain/token-limits.js';
import { isModelId, MODEL_IDS, type ModelId } from '../domain/models.js';
import { UsageError } from './usage-error.js';

/** parseArgs options shared by `token create` and `token update`. */
export const LIMIT_OPTIONS = {
  'image-quota': { type: 'string' },
  rpm: { type: 'string' },
  concurrency: { type: 'string' },
  models: { type: 'string' },
  'pending-tasks': { type: 'string' },
  'upload-mb': { type: 'string' },
  'upload-files': { type: 'string' },
} as const;

export const LIMIT_USAGE = `limits (on create and update; "unlimited" removes one on update):
  --image-quota N     total images the token may produce (default unlimited)
  --rpm N             requests per minute
  --concurrency N     requests running at once
  --models A,B        models the token may use ("all" for every model)
bounds every token has ("default" returns to the deployment's setting on update):
  --pending-tasks N   asynchronous tasks waiting to run (IMAGEGATE_TASK_QUEUE_LIMIT_PER_TOKEN)
  --upload-mb N       MiB of uploads per upload window (IMAGEGATE_UPLOAD_MB_PER_TOKEN)
  --upload-files N    files uploaded per upload window (IMAGEGATE_UPLOAD_FILES_PER_TOKEN)`;

/** The bounds every token has: a token without its own has the deployment's setting. */
type BoundOption = 'pending-tasks' | 'upload-mb' | 'upload-files';

type LimitValues = Partial<Record<keyof typeof LIMIT_OPTIONS, string | boolean | undefined>>;

const UNLIMITED = new Set(['unlimited', 'none']);
const DEFAULT = 'default';

/** Reads the limit options; `context` (e.g. "token update") prefixes every problem. */
export function readLimitChanges(
  values: LimitValues,
  context: string,
  usage: string,
): TokenLimitChanges {
  const fail = (message: string): never => {
    throw new UsageError(`${context}: ${message}`, usage);
  };
  const count = (name: keyof typeof LIMIT_OPTIONS, min: number): number | null | undefined => {
    const raw = values[name];
    if (typeof raw !== 'string') return undefined;
    if (UNLIMITED.has(raw)) return null;
    if (!/^[0-9]{1,12}$/.test(raw) || Number(raw) < min)
      return fail(`--${name} must be an integer of at least ${min}, or "unlimited", got "${raw}"`);
    return Number(raw);
  };
  const bound = (name: BoundOption): number | null | undefined => {
    const raw = values[name];
    if (typeof raw !== 'string') return undefined;
    if (raw === DEFAULT) return null;
    if (!/^[0-9]{1,12}$/.test(raw) || Number(raw) < 1)
      return fail(
        `--${name} must be an integer of at least 1, or "${DEFAULT}" for the deployment's setting, got "${raw}"`,
      );
    return Number(raw);
  };
  const changes: TokenLimitChanges = {};
  const maxPendingTasks = bound('pending-tasks');
  const uploadMbPerWindow = bound('upload-mb');
  const uploadFilesPerWindow = bound('upload-files');
  if (maxPendingTasks !== undefined) changes.maxPendingTasks = maxPendingTasks;
  if (uploadMbPerWindow !== undefined) changes.uploadMbPerWindow = uploadMbPerWindow;
  if (uploadFilesPerWindow !== undefined) changes.uploadFilesPerWindow = uploadFilesPerWindow;
  const imageQuota = count('image-quota', 0);
  const requestsPerMinute = count('rpm', 1);
  const maxConcurrent = count('concurrency', 1);
  if (imageQuota !== undefined) changes.imageQuota = imageQuota;
  if (requestsPerMinute !== undefined) changes.requestsPerMinute = requestsPerMinute;
  if (maxConcurrent !== undefined) changes.maxConcurrent = maxConcurrent;
  const models = values.models;
  if (typeof models === 'string') {
    if (models === 'all') changes.allowedModels = null;
    else {
      const names = models
        .split(',')
        .map((name) => name.trim())
        .filter((name) => name !== '');
      const unknown = names.filter((name) => !isModelId(name));
      if (names.length === 0 || unknown.length > 0)
        fail(
          `--models must list models among ${MODEL_IDS.join(', ')} or be "all", got "${models}"`,
        );
      changes.allowedModels = [...new Set(names)] as ModelId[];
    }
  }
  return changes;
}

/** `--expires-in 30d`, `--expires-at 2025-01-01T00:00:00Z` or `--no-expiry`, for token update. */
export function readExpiryChange(
  values: { 'expires-in'?: unknown; 'expires-at'?: unknown; 'no-expiry'?: unknown },
  now: number,
  usage: string,
): number | null | undefined {
  const given = [
    values['expires-in'],
    values['expires-at'],
    values['no-expiry'] === true ? true : undefined,
  ];
  if (given.filter((value) => value !== undefined).length > 1)
    throw new UsageError(
      'token update: give one of --expires-in, --expires-at and --no-expiry',
      usage,
    );
  if (values['no-expiry'] === true) return null;
  if (typeof values['expires-in'] === 'string') {
    const seconds = parseDuration(values['expires-in']);
    if (seconds === undefined)
      throw new UsageError(
        `token update: --expires-in must look like 90s, 15m, 12h, 30d or 2w, got "${values['expires-in']}"`,
        usage,
      );
    return now + seconds * 1000;
  }
  if (typeof values['expires-at'] === 'string') {
    const time = Date.parse(values['expires-at']);
    if (Number.isNaN(time))
      throw new UsageError(
        `token update: --expires-at must be an ISO 8601 time, got "${values['expires-at']}"`,
        usage,
      );
    return time;
  }
  return undefined;
}

/** The limits as `token list` and `token update` print them. */
export function describeLimits(limits: TokenLimits & QuotaStanding) {
  return {
    imageQuota: limits.imageQuota ?? null,
    imagesUsed: limits.imagesUsed,
    imagesReserved: limits.imagesReserved,
    requestsPerMinute: limits.requestsPerMinute ?? null,
    maxConcurrent: limits.maxConcurrent ?? null,
    allowedModels: limits.allowedModels ?? null,
    /** null: the deployment's setting. */
    maxPendingTasks: limits.maxPendingTasks ?? null,
    uploadMbPerWindow: limits.uploadMbPerWindow ?? null,
    uploadFilesPerWindow: limits.uploadFilesPerWindow ?? null,
  };
}
