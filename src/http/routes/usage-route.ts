import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { invalidParameter } from '../../errors/gateway-error.js';
import { usageDocument } from '../../ledger/usage-document.js';
import {
  answerUsageQuery,
  readUsageQuery,
  type UsageQueryText,
  UsageQueryError,
  type UsageReader,
} from '../../ledger/usage-query.js';
import { requireAdmin } from '../admin-auth.js';
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
  groupBy: 'group_by',
  limit: 'limit',
};
const PARAMETERS = new Set([...Object.values(QUERY_NAMES), 'format']);

/**
 * GET /admin/usage: the usage ledger for admin tokens. Query parameters `since`, `until`, `token`,
 * `account`, `group_by` (day, model, token), `limit` and `format` (json, csv), as the CLI's options.
 */
export function registerUsageRoute(app: FastifyInstance, options: UsageRouteOptions): void {
  app.get(
    '/admin/usage',
    { onRequest: requireAdmin(options.authenticator) },
    async (request, reply) => {
      const parameters = readParameters(request.query);
      const format = parameters.format ?? 'json';
      if (format !== 'json' && format !== 'csv')
        throw invalidParameter('format', `must be json or csv, got ${echoQuoted(format)}`);
      let query;
      try {
        query = readUsageQuery(
          {
            since: parameters.since,
            until: parameters.until,
            token: parameters.token,
            account: parameters.account,
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
    },
  );
}

function readParameters(query: unknown): Record<string, string | undefined> {
  const parameters: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries((query ?? {}) as Record<string, unknown>)) {
    if (!PARAMETERS.has(name))
      throw invalidParameter(
        name,
        `is not a parameter of /admin/usage; use ${[...PARAMETERS].join(', ')}`,
      );
    if (typeof value !== 'string') throw invalidParameter(name, 'must be given once');
    parameters[name] = value;
  }
  return parameters;
}
