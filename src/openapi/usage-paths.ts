import { USAGE_GROUPINGS } from '../domain/usage-filter.js';
import { query } from './admin-paths.js';
import type { ErrorResponses } from './upload-paths.js';

const text = { type: 'string' } as const;

/** The query parameters of a usage read; `whose` are the admin's choice of token and account. */
function usageParameters(whose: object[]): object[] {
  return [
    query('since', text, 'a date, an ISO 8601 time or a duration back (24h, 7d)'),
    query('until', text),
    ...whose,
    query(
      'request_id',
      text,
      "one request's rows: its own once it ended, a stand-in (status 0) before that",
    ),
    query('group_by', { enum: [...USAGE_GROUPINGS] }),
    query('limit', { type: 'integer', minimum: 1, maximum: 100_000, default: 1000 }),
    query('format', { enum: ['json', 'csv'], default: 'json' }),
  ];
}

/** GET /admin/usage and GET /me/usage (docs/admission.md, docs/admin-api.md). */
export function usagePaths(errors: ErrorResponses): object {
  const responses = {
    '200': {
      description: 'Rows (or groups) and totals; CSV when format=csv.',
      content: {
        'application/json': { schema: { type: 'object' } },
        'text/csv': { schema: text },
      },
    },
    ...errors(['InvalidParameter', 'InvalidApiKey', 'Overloaded']),
  };
  return {
    '/admin/usage': {
      get: {
        operationId: 'getUsage',
        summary: 'The usage ledger: rows or groups, and totals',
        description: 'Admin tokens only; not counted against the rpm of the token.',
        parameters: usageParameters([query('token', text), query('account', text)]),
        responses,
      },
    },
    '/me/usage': {
      get: {
        operationId: 'getOwnUsage',
        summary: "The caller's own usage, as GET /admin/usage answers for one token",
        parameters: usageParameters([]),
        responses,
      },
    },
  };
}
