import type { FastifyInstance } from 'fastify';
import { invalidParameter } from '../../errors/gateway-error.js';
import type { Authenticator } from '../../auth/authenticator.js';
import { holdsControlCharacter } from '../../support/stored-text.js';
import type { TokenAdmin, TokenListQuery } from '../../tokens/token-admin.js';
import { readCreateBody, readUpdateBody } from '../../tokens/token-body.js';
import { requireAdmin } from '../admin-auth.js';
import { principalOf } from '../hooks/authentication.js';

export interface AdminTokensRouteOptions {
  authenticator: Authenticator;
  tokens: TokenAdmin;
  now: () => number;
}

/** A token's body is a few hundred bytes; nothing larger is read. */
export const ADMIN_BODY_LIMIT = 16 * 1024;
export const DEFAULT_PAGE = 100;
export const MAX_PAGE = 1000;
const LIST_PARAMETERS = ['account', 'name', 'revoked', 'limit', 'cursor'];
const CHANGES_PARAMETERS = ['token', 'limit'];

type ById = { Params: { id: string } };

/**
 * The admin API for gateway tokens (docs/admin-api.md): create, list, get, update, revoke, for
 * admin tokens only. Like /admin/usage, these routes are not counted against a token's rpm.
 */
export function registerAdminTokensRoute(
  app: FastifyInstance,
  options: AdminTokensRouteOptions,
): void {
  const { tokens, now } = options;
  const route = { onRequest: requireAdmin(options.authenticator), bodyLimit: ADMIN_BODY_LIMIT };
  const actor = (request: Parameters<typeof principalOf>[0]) =>
    principalOf(request).tokenId ?? 'unknown';

  app.post('/admin/tokens', route, async (request, reply) => {
    const created = await tokens.create(actor(request), readCreateBody(request.body, now()));
    return reply
      .code(201)
      .header('cache-control', 'no-store')
      .send({ token: created.token, record: created.view });
  });
  app.get('/admin/tokens', route, async (request) => {
    const page = await tokens.list(readListQuery(request.query));
    return { tokens: page.tokens, next_cursor: page.nextCursor };
  });
  app.get<ById>('/admin/tokens/:id', route, async (request) => tokens.get(request.params.id));
  app.patch<ById>('/admin/tokens/:id', route, async (request) =>
    tokens.update(actor(request), request.params.id, readUpdateBody(request.body, now())),
  );
  app.post<ById>('/admin/tokens/:id/revoke', route, async (request) =>
    tokens.revoke(actor(request), request.params.id),
  );
}

/** GET /admin/changes?token=ID&limit=L: who changed which token, newest first. */
export function registerAdminChangesRoute(
  app: FastifyInstance,
  options: Omit<AdminTokensRouteOptions, 'now'>,
): void {
  app.get('/admin/changes', { onRequest: requireAdmin(options.authenticator) }, async (request) => {
    const query = readQuery(request.query, CHANGES_PARAMETERS, '/admin/changes');
    return { changes: await options.tokens.changes(query.token, readPageSize(query.limit)) };
  });
}

function readListQuery(query: unknown): TokenListQuery {
  const text = readQuery(query, LIST_PARAMETERS, '/admin/tokens');
  const revoked = text.revoked;
  if (revoked !== undefined && revoked !== 'true' && revoked !== 'false')
    throw invalidParameter('revoked', 'must be true or false');
  return {
    account: text.account,
    name: text.name,
    revoked: revoked === undefined ? undefined : revoked === 'true',
    limit: readPageSize(text.limit),
    cursor: text.cursor,
  };
}

function readQuery(
  query: unknown,
  accepted: readonly string[],
  path: string,
): Record<string, string | undefined> {
  const text: Record<string, string> = {};
  for (const [name, value] of Object.entries((query ?? {}) as Record<string, unknown>)) {
    if (!accepted.includes(name))
      throw invalidParameter(name, `is not a parameter of ${path}; use ${accepted.join(', ')}`);
    if (typeof value !== 'string') throw invalidParameter(name, 'must be given once');
    // No name, account or id holds one, and PostgreSQL refuses U+0000 in a filter.
    if (holdsControlCharacter(value))
      throw invalidParameter(name, 'must not hold a control character');
    text[name] = value;
  }
  return text;
}

function readPageSize(limit: string | undefined): number {
  if (limit === undefined) return DEFAULT_PAGE;
  const size = /^[1-9][0-9]{0,3}$/.test(limit) ? Number(limit) : 0;
  if (!(size >= 1 && size <= MAX_PAGE))
    throw invalidParameter('limit', `must be an integer from 1 to ${MAX_PAGE}`);
  return size;
}
