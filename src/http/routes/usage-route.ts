import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { invalidParameter } from '../../errors/gateway-error.js';
import { usageDocument } from '../../ledger/usage-document.js';
import {
  answerUsageQuery,
  readUsageQuery,
  type UsageQueryText,
  UsageQueryError,
  type UsageReader,
} from '../../ledger/usage-query.js';
import { requireAdmin, requireToken } from '../admin-auth.js';
import { principalOf } from '../hooks/authentication.js';
import type { Authenticator } from '../../auth/authenticator.js';
import { echoQuoted } from '../../errors/echo.js';

export interface UsageRouteOptions {
  authenticator: Authenticator;
  usage: UsageReader;
  now: () => number;
}

const QUERY_NAMES: Record<keyof UsageQueryText, string> = {
  since: 'since',
  until: 'until',
  token: 'token',
  account: 'account',
  requestId: 'request_id',
  groupBy: 'group_by',
  limit: 'limit',
};
const PARAMETERS = new Set([...Object.values(QUERY_NAMES), 'format']);
/** /me/usage: the caller's own rows, so neither a token nor an account to choose. */
const OWN_PARAMETERS = new Set(
  [...PARAMETERS].filter((name) => name !== 'token' && name !== 'account'),
);

/**
 * GET /admin/usage: the usage ledger for admin tokens. Query parameters `since`, `until`, `token`,
 * `account`, `request_id`, `group_by` (day, model, token), `limit` and `format` (json, csv), as the
 * CLI's options.
 * GET /me/usage: the same for any valid token, restricted to its own rows (no `token`, `account`).
 */
export function registerUsageRoute(app: FastifyInstance, options: UsageRouteOptions): void {
  app.get(
    '/admin/usage',
    { onRequest: requireAdmin(options.authenticator) },
    async (request, reply) => {
      const parameters = readParameters(request.query, PARAMETERS, '/admin/usage');
      return sendUsage(reply, options, parameters, {
        token: parameters.token,
        account: parameters.account,
      });
    },
  );
  app.get(
    '/me/usage',
    { onRequest: requireToken(options.authenticator) },
    async (request, reply) => {
      const parameters = readParameters(request.query, OWN_PARAMETERS, '/me/usage');
      const caller = principalOf(request);
      // A token without an id (an external token without `jti`) is known by its account alone.
      return sendUsage(reply, options, parameters, {
        token: caller.tokenId,
        account: caller.tokenId === undefined ? caller.account : undefined,
      });
    },
  );
}

async function sendUsage(
  reply: FastifyReply,
  options: UsageRouteOptions,
  parameters: Record<string, string | undefined>,
  whose: { token: string | undefined; account: string | undefined },
) {
  const format = parameters.format ?? 'json';
  if (format !== 'json' && format !== 'csv')
    throw invalidParameter('format', `must be json or csv, got ${echoQuoted(format)}`);
  let query;
  try {
    query = readUsageQuery(
      {
        since: parameters.since,
        until: parameters.until,
        token: whose.token,
        account: whose.account,
        requestId: parameters.request_id,
        groupBy: parameters.group_by,
        limit: parameters.limit,
      },
      options.now(),
      QUERY_NAMES,
    );
  } catch (error) {
    if (error instanceof UsageQueryError) throw invalidParameter('', error.message);
    throw error;
  }
  const answer = await answerUsageQuery(options.usage, query);
  const pieces = await usageDocument(answer, format);
  return reply
    .type(format === 'csv' ? 'text/csv; charset=utf-8' : 'application/json; charset=utf-8')
    .header(
      'content-length',
      pieces.reduce((bytes, piece) => bytes + piece.length, 0),
    )
    .send(Readable.from(pieces));
}

function readParameters(
  query: unknown,
  accepted: ReadonlySet<string>,
  path: string,
): Record<string, string | undefined> {
  const parameters: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries((query ?? {}) as Record<string, unknown>)) {
    if (!accepted.has(name))
      throw invalidParameter(
        name,
        `is not a parameter of ${path}; use ${[...accepted].join(', ')}`,
      );
    if (typeof value !== 'string') throw invalidParameter(name, 'must be given once');
    parameters[name] = value;
  }
  return parameters;
}
