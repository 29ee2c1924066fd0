import type { ModelId } from '../domain/models.js';
import type { TokenLimitChanges } from '../domain/token-limits.js';
import { invalidParameter } from '../errors/gateway-error.js';
import { echoQuoted } from '../errors/echo.js';
import { parseDuration } from '../support/duration.js';
import { checkTokenName } from '../auth/token-issuer.js';
import { COUNT_RULES, distinctModels, isCount, MAX_COUNT, modelsProblem } from './limit-rules.js';
import type { CreateToken, UpdateToken } from './token-admin.js';

const CREATE_KEYS = ['name', 'account', 'admin', 'expires_in', 'expires_at', 'limits'];
const UPDATE_KEYS = ['name', 'limits', 'expires_in', 'expires_at'];
const LIMIT_KEYS = [...COUNT_RULES.map((rule) => rule.field), 'models'];

type Fields = Record<string, unknown>;

/** The body of `POST /admin/tokens`; InvalidParameter names the field at fault. */
export function readCreateBody(body: unknown, now: number): CreateToken {
  const fields = objectOf(body, 'body', CREATE_KEYS);
  if (fields.name === undefined) throw invalidParameter('name', 'is required');
  const expiry = readExpiry(fields, now, false);
  return {
    name: readName(fields.name),
    account: fields.account === undefined ? undefined : readText(fields.account, 'account'),
    admin: readAdmin(fields.admin),
    expiresAt: expiry ?? undefined,
    limits: readLimits(fields.limits),
  };
}

/** The body of `PATCH /admin/tokens/:id`: at least one field. */
export function readUpdateBody(body: unknown, now: number): UpdateToken {
  const fields = objectOf(body, 'body', UPDATE_KEYS);
  if (Object.keys(fields).length === 0)
    throw invalidParameter('body', `must give at least one of ${UPDATE_KEYS.join(', ')}`);
  const limits = readLimits(fields.limits);
  const expiresAt = readExpiry(fields, now, true);
  if (expiresAt !== undefined) limits.expiresAt = expiresAt;
  return { name: fields.name === undefined ? undefined : readName(fields.name), limits };
}

function objectOf(value: unknown, path: string, keys: readonly string[]): Fields {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw invalidParameter(path, 'must be a JSON object');
  const fields = value as Fields;
  for (const key of Object.keys(fields)) {
    const at = path === 'body' ? key : `${path}.${key}`;
    if (!keys.includes(key)) throw invalidParameter(at, `is not a field; use ${keys.join(', ')}`);
  }
  return fields;
}

function readText(value: unknown, path: string): string {
  if (typeof value !== 'string') throw invalidParameter(path, 'must be a string');
  const text = value.trim();
  if (text === '') throw invalidParameter(path, 'must not be empty');
  return text;
}

function readName(value: unknown): string {
  const name = readText(value, 'name');
  checkTokenName(name);
  return name;
}

function readAdmin(value: unknown): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw invalidParameter('admin', 'must be true or false');
  return value;
}

/**
 * `expires_in` (a duration from now) or `expires_at` (an ISO 8601 time; null, on update only:
 * never expires) as a time; undefined when neither is given.
 */
function readExpiry(fields: Fields, now: number, nullable: boolean): number | null | undefined {
  const { expires_in: expiresIn, expires_at: expiresAt } = fields;
  if (expiresIn !== undefined && expiresAt !== undefined)
    throw invalidParameter('expires_in', 'give expires_in or expires_at, not both');
  if (expiresIn !== undefined) {
    const seconds = typeof expiresIn === 'string' ? parseDuration(expiresIn) : undefined;
    if (seconds === undefined)
      throw invalidParameter(
        'expires_in',
        `must look like 90s, 15m, 12h, 30d or 2w, got ${echoQuoted(expiresIn)}`,
      );
    return now + seconds * 1000;
  }
  if (expiresAt === undefined) return undefined;
  if (expiresAt === null && nullable) return null;
  const time = typeof expiresAt === 'string' ? Date.parse(expiresAt) : Number.NaN;
  if (Number.isNaN(time))
    throw invalidParameter(
      'expires_at',
      `must be an ISO 8601 time${nullable ? ' or null' : ''}, got ${echoQuoted(expiresAt)}`,
    );
  return time;
}

/** `limits`: each count an integer of at least its minimum, or null to remove it. */
function readLimits(value: unknown): TokenLimitChanges {
  if (value === undefined) return {};
  const fields = objectOf(value, 'limits', LIMIT_KEYS);
  const changes: TokenLimitChanges = {};
  for (const rule of COUNT_RULES) {
    const given = fields[rule.field];
    if (given === undefined) continue;
    if (given !== null && !isCount(rule, given))
      throw invalidParameter(
        `limits.${rule.field}`,
        `must be an integer from ${rule.min} to ${MAX_COUNT}, or null, got ${echoQuoted(given)}`,
      );
    changes[rule.key] = given;
  }
  const models = fields.models;
  if (models === null) changes.allowedModels = null;
  else if (models !== undefined) {
    const problem = Array.isArray(models) ? modelsProblem(models) : 'must be a list or null';
    if (problem !== undefined)
      throw invalidParameter('limits.models', `${problem}, got ${echoQuoted(models)}`);
    changes.allowedModels = distinctModels(models as ModelId[]);
  }
  return changes;
}
