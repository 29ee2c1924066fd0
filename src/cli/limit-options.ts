import { parseDuration } from '../support/duration.js';
import type { QuotaStanding, TokenLimitChanges, TokenLimits } from '../domain/token-limits.js';
import { MODEL_IDS, type ModelId } from '../domain/models.js';
import {
  COUNT_RULES,
  type CountRule,
  distinctModels,
  isCount,
  modelsProblem,
} from '../tokens/limit-rules.js';
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

type LimitValues = Partial<Record<keyof typeof LIMIT_OPTIONS, string | boolean | undefined>>;

const UNLIMITED = new Set(['unlimited', 'none']);
const DEFAULT = 'default';

/**
 * Reads the limit options into changes, by the rules the admin API applies too (COUNT_RULES);
 * `context` (e.g. "token update") prefixes every problem.
 */
export function readLimitChanges(
  values: LimitValues,
  context: string,
  usage: string,
): TokenLimitChanges {
  const fail = (message: string): never => {
    throw new UsageError(`${context}: ${message}`, usage);
  };
  const changes: TokenLimitChanges = {};
  for (const rule of COUNT_RULES) {
    const value = readCount(rule, values[rule.flag], fail);
    if (value !== undefined) changes[rule.key] = value;
  }
  const models = values.models;
  if (typeof models === 'string') {
    if (models === 'all') changes.allowedModels = null;
    else {
      const names = models
        .split(',')
        .map((name) => name.trim())
        .filter((name) => name !== '');
      if (modelsProblem(names) !== undefined)
        fail(
          `--models must list models among ${MODEL_IDS.join(', ')} or be "all", got "${models}"`,
        );
      changes.allowedModels = distinctModels(names as ModelId[]);
    }
  }
  return changes;
}

/** A count option: "unlimited" removes a limit, "default" returns a bound to the deployment's. */
function readCount(
  rule: CountRule,
  raw: string | boolean | undefined,
  fail: (message: string) => never,
): number | null | undefined {
  if (typeof raw !== 'string') return undefined;
  if (rule.bound ? raw === DEFAULT : UNLIMITED.has(raw)) return null;
  if (!/^[0-9]{1,12}$/.test(raw) || !isCount(rule, Number(raw)))
    return fail(
      rule.bound
        ? `--${rule.flag} must be an integer of at least ${rule.min}, or "${DEFAULT}" for the deployment's setting, got "${raw}"`
        : `--${rule.flag} must be an integer of at least ${rule.min}, or "unlimited", got "${raw}"`,
    );
  return Number(raw);
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
