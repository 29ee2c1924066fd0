import type { TokenLimitChanges } from '../domain/token-limits.js';
import { isModelId, MODEL_IDS, type ModelId } from '../domain/models.js';
import { invalidParameter } from '../errors/gateway-error.js';

/** A numeric limit of a token as the API (`field`), the CLI (`flag`) and the store (`key`) name it. */
export interface CountRule {
  field: 'image_quota' | 'rpm' | 'concurrency' | 'pending_tasks' | 'upload_mb' | 'upload_files';
  flag: 'image-quota' | 'rpm' | 'concurrency' | 'pending-tasks' | 'upload-mb' | 'upload-files';
  key: Exclude<keyof TokenLimitChanges, 'allowedModels' | 'expiresAt'>;
  min: number;
  /** A bound every token has: null returns it to the deployment's setting instead of removing it. */
  bound: boolean;
}

/** The largest count a limit takes: twelve digits, as the CLI has always read them. */
export const MAX_COUNT = 999_999_999_999;

export const COUNT_RULES: readonly CountRule[] = [
  { field: 'image_quota', flag: 'image-quota', key: 'imageQuota', min: 0, bound: false },
  { field: 'rpm', flag: 'rpm', key: 'requestsPerMinute', min: 1, bound: false },
  { field: 'concurrency', flag: 'concurrency', key: 'maxConcurrent', min: 1, bound: false },
  { field: 'pending_tasks', flag: 'pending-tasks', key: 'maxPendingTasks', min: 1, bound: true },
  { field: 'upload_mb', flag: 'upload-mb', key: 'uploadMbPerWindow', min: 1, bound: true },
  { field: 'upload_files', flag: 'upload-files', key: 'uploadFilesPerWindow', min: 1, bound: true },
];

/** Whether `value` is a count `rule` accepts. */
export function isCount(rule: CountRule, value: unknown): value is number {
  return (
    typeof value === 'number' && Number.isInteger(value) && value >= rule.min && value <= MAX_COUNT
  );
}

/** The problem with a list of models, or undefined: a non-empty list of known model ids. */
export function modelsProblem(names: readonly unknown[]): string | undefined {
  if (names.length === 0 || !names.every(isModelId))
    return `must list models among ${MODEL_IDS.join(', ')}`;
  return undefined;
}

/**
 * Refuses changes no token may have, naming the API field (`limits.rpm`): the one check both the
 * CLI (after reading its flags) and the API pass through before anything is stored.
 */
export function checkLimitChanges(changes: TokenLimitChanges): void {
  for (const rule of COUNT_RULES) {
    const value = changes[rule.key];
    if (value !== undefined && value !== null && !isCount(rule, value))
      throw invalidParameter(
        `limits.${rule.field}`,
        `must be an integer from ${rule.min} to ${MAX_COUNT}, or null`,
      );
  }
  const models = changes.allowedModels;
  if (models !== undefined && models !== null) {
    const problem = modelsProblem(models);
    if (problem !== undefined) throw invalidParameter('limits.models', problem);
  }
}

/** The models without repeats, in the order given. */
export function distinctModels(models: readonly ModelId[]): ModelId[] {
  return [...new Set(models)];
}
