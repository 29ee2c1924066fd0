import { parseArgs, type ParseArgsConfig } from 'node:util';
import { parseDuration } from '../support/duration.js';
import type { Services } from '../bootstrap/open-services.js';
import { SqlTokenLimitsStore, type TokenLimitsRecord } from '../store/token-limits-store.js';
import type { TokenRecord } from '../store/token-store.js';
import {
  describeLimits,
  LIMIT_OPTIONS,
  readExpiryChange,
  readLimitChanges,
} from './limit-options.js';
import { TOKEN_USAGE } from './operator-usage.js';
import { UsageError } from './usage-error.js';
import { GatewayError } from '../errors/gateway-error.js';
import { silentLog } from '../support/log.js';
import { TokenAdmin } from '../tokens/token-admin.js';
import { SqlAdminChangeStore } from '../store/admin-change-store.js';
import { loggedChanges } from '../tokens/admin-change-log.js';

export interface Output {
  out(text: string): void;
}

export async function runTokenCommand(
  args: string[],
  services: Services,
  output: Output,
): Promise<void> {
  const [action, ...rest] = args;
  switch (action) {
    case 'create':
      return createToken(rest, services, output);
    case 'list':
      return listTokens(rest, services, output);
    case 'revoke':
      return revokeToken(rest, services, output);
    case 'update':
      return updateToken(rest, services, output);
    default:
      throw new UsageError(
        action === undefined ? 'token: missing action' : `token: unknown action "${action}"`,
        TOKEN_USAGE,
      );
  }
}

async function createToken(args: string[], services: Services, output: Output): Promise<void> {
  const { values } = parse(args, {
    name: { type: 'string' },
    account: { type: 'string' },
    'expires-in': { type: 'string' },
    admin: { type: 'boolean', default: false },
    ...LIMIT_OPTIONS,
  });
  const limits = readLimitChanges(values, 'token create', TOKEN_USAGE);
  const name = values.name as string | undefined;
  if (name === undefined || name.trim() === '')
    throw new UsageError('token create: --name is required', TOKEN_USAGE);
  const expiresIn = values['expires-in'] as string | undefined;
  const expiresInSeconds = expiresIn === undefined ? undefined : parseDuration(expiresIn);
  if (expiresIn !== undefined && expiresInSeconds === undefined) {
    throw new UsageError(
      `token create: --expires-in must look like 90s, 15m, 12h, 30d or 2w, got "${expiresIn}"`,
      TOKEN_USAGE,
    );
  }
  const { token } = await tokenAdminOf(services).create(CLI_ACTOR, {
    name: name.trim(),
    // Absent, the token is the `default` account's.
    account: (values.account as string | undefined)?.trim() || undefined,
    expiresInSeconds,
    admin: values.admin === true,
    limits,
  });
  output.out(`${token}\n`);
}

async function listTokens(args: string[], services: Services, output: Output): Promise<void> {
  const { values } = parse(args, { json: { type: 'boolean', default: false } });
  const tokens = await services.tokenStore.list();
  const limits = new Map(
    (await new SqlTokenLimitsStore(services.database.db).list()).map((row) => [row.tokenId, row]),
  );
  if (values.json === true) {
    const described = tokens.map((token) => ({
      ...describeToken(token),
      limits: limitsOf(limits, token.id),
    }));
    output.out(`${JSON.stringify(described, null, 2)}\n`);
    return;
  }
  const rows = [
    [
      'ID',
      'NAME',
      'ACCOUNT',
      'CREATED',
      'EXPIRES',
      'STATUS',
      'ADMIN',
      'IMAGES',
      'RPM',
      'CONC',
      'MODELS',
    ],
  ];
  for (const token of tokens) {
    const described = describeToken(token);
    const limit = limitsOf(limits, token.id);
    rows.push([
      token.id,
      token.name,
      token.account,
      described.created,
      described.expires ?? '-',
      described.status,
      token.admin ? 'yes' : 'no',
      `${limit?.imagesUsed ?? 0}/${limit?.imageQuota ?? '-'}`,
      String(limit?.requestsPerMinute ?? '-'),
      String(limit?.maxConcurrent ?? '-'),
      limit?.allowedModels?.join(',') ?? 'all',
    ]);
  }
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  output.out(
    rows
      .map((row) =>
        row
          .map((cell, column) => cell.padEnd(widths[column]!))
          .join('  ')
          .trimEnd(),
      )
      .join('\n') + '\n',
  );
}

async function revokeToken(args: string[], services: Services, output: Output): Promise<void> {
  const { positionals } = parse(args, {}, true);
  const [id] = positionals;
  if (id === undefined || positionals.length !== 1)
    throw new UsageError('token revoke: give exactly one token ID', TOKEN_USAGE);
  await orUsageError(
    tokenAdminOf(services).revoke(CLI_ACTOR, id),
    `token revoke: no token with ID ${id}`,
  );
  output.out(`revoked ${id}\n`);
}

async function updateToken(args: string[], services: Services, output: Output): Promise<void> {
  const { values, positionals } = parse(
    args,
    {
      ...LIMIT_OPTIONS,
      'expires-in': { type: 'string' },
      'expires-at': { type: 'string' },
      'no-expiry': { type: 'boolean' },
    },
    true,
  );
  const [id] = positionals;
  if (id === undefined || positionals.length !== 1)
    throw new UsageError('token update: give exactly one token ID', TOKEN_USAGE);
  const changes = readLimitChanges(values, 'token update', TOKEN_USAGE);
  const expiresAt = readExpiryChange(values, Date.now(), TOKEN_USAGE);
  if (expiresAt !== undefined) changes.expiresAt = expiresAt;
  if (Object.keys(changes).length === 0)
    throw new UsageError('token update: give at least one limit or expiry to change', TOKEN_USAGE);
  await orUsageError(
    tokenAdminOf(services).update(CLI_ACTOR, id, { limits: changes }),
    `token update: no token with ID ${id}`,
  );
  const token = await services.tokenStore.find(id);
  const limits = await new SqlTokenLimitsStore(services.database.db).find(id);
  output.out(
    `${JSON.stringify(
      {
        ...(token === undefined ? { id } : describeToken(token)),
        limits: limits === undefined ? null : describeLimits(limits),
      },
      null,
      2,
    )}\n`,
  );
}

/** Who the change log names for changes made on the server's own disk. */
const CLI_ACTOR = 'cli';

function tokenAdminOf(services: Services): TokenAdmin {
  const changeStore = new SqlAdminChangeStore(services.database.db);
  return new TokenAdmin({
    issuer: services.tokenIssuer,
    tokens: services.tokenStore,
    limits: new SqlTokenLimitsStore(services.database.db),
    // The CLI's output is its answer; its changes go to the durable record only.
    changes: loggedChanges(silentLog, changeStore),
    history: changeStore,
    now: Date.now,
  });
}

/** The CLI's words for an unknown token; every other failure as it is. */
async function orUsageError<T>(operation: Promise<T>, notFound: string): Promise<T> {
  try {
    return await operation;
  } catch (error) {
    if (error instanceof GatewayError && error.code === 'NotFound') throw new UsageError(notFound);
    throw error;
  }
}

function limitsOf(limits: Map<string, TokenLimitsRecord>, id: string) {
  const found = limits.get(id);
  return found === undefined ? undefined : describeLimits(found);
}

function describeToken(token: TokenRecord) {
  const now = Date.now();
  const status =
    token.revokedAt !== undefined
      ? 'revoked'
      : token.expiresAt !== undefined && token.expiresAt <= now
        ? 'expired'
        : 'active';
  return {
    id: token.id,
    name: token.name,
    account: token.account,
    created: new Date(token.createdAt).toISOString(),
    expires: token.expiresAt === undefined ? undefined : new Date(token.expiresAt).toISOString(),
    revoked: token.revokedAt === undefined ? undefined : new Date(token.revokedAt).toISOString(),
    status,
    admin: token.admin,
  };
}

function parse<O extends NonNullable<ParseArgsConfig['options']>>(
  args: string[],
  options: O,
  allowPositionals = false,
) {
  try {
    return parseArgs({ args, options, allowPositionals, strict: true as const });
  } catch (error) {
    throw new UsageError((error as Error).message, TOKEN_USAGE);
  }
}
