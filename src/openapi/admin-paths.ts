import { MODEL_IDS } from '../domain/models.js';
import type { ErrorResponses } from './upload-paths.js';

const text = { type: 'string' } as const;
const time = { type: 'string', format: 'date-time' } as const;
const nullable = (schema: object) => ({ oneOf: [schema, { type: 'null' }] });
const count = (minimum: number, meaning: string) =>
  nullable({ type: 'integer', minimum, maximum: 999_999_999_999, description: meaning });
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: object) => ({ 'application/json': { schema } });

const TokenLimits = {
  type: 'object',
  additionalProperties: false,
  description:
    'null: no limit (image_quota, rpm, concurrency, models) or the deployment setting (pending_tasks, upload_mb, upload_files). On update, null removes a limit and an absent key leaves it.',
  properties: {
    image_quota: count(0, 'Images the token may ever produce.'),
    rpm: count(1, 'Requests per minute.'),
    concurrency: count(1, 'Requests running at once.'),
    models: nullable({
      type: 'array',
      minItems: 1,
      items: { enum: [...MODEL_IDS] },
      description: 'Models the token may use.',
    }),
    pending_tasks: count(1, 'Asynchronous tasks waiting to run.'),
    upload_mb: count(1, 'MiB uploaded per upload window.'),
    upload_files: count(1, 'Files uploaded per upload window.'),
  },
} as const;

const TokenView = {
  type: 'object',
  required: ['id', 'name', 'account', 'admin', 'created_at', 'expires_at', 'revoked_at'],
  properties: {
    id: nullable(text),
    name: nullable({ ...text, description: 'null for a token issued elsewhere' }),
    account: text,
    admin: { type: 'boolean' },
    created_at: nullable(time),
    expires_at: nullable(time),
    revoked_at: nullable(time),
    limits: ref('TokenLimits'),
    images_used: { type: 'integer' },
  },
} as const;

const expiresIn = { ...text, pattern: '^[1-9][0-9]{0,6}[smhdw]$', examples: ['30d', '12h'] };
const name = { ...text, minLength: 1, maxLength: 200 };

const TokenCreate = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: {
    name,
    account: { ...text, description: 'default: "default"' },
    admin: { type: 'boolean', default: false },
    expires_in: expiresIn,
    expires_at: { ...time, description: 'in the future; one of expires_in and expires_at' },
    limits: ref('TokenLimits'),
  },
} as const;

const TokenUpdate = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    name,
    expires_in: expiresIn,
    expires_at: nullable({ ...time, description: 'null: never expires' }),
    limits: ref('TokenLimits'),
  },
} as const;

const AdminChange = {
  type: 'object',
  properties: {
    at: time,
    actor: { ...text, description: "the admin token's id, or cli" },
    action: { enum: ['create', 'update', 'revoke'] },
    token: text,
    fields: { type: 'array', items: text },
  },
} as const;

export const ADMIN_SCHEMAS = { TokenLimits, TokenView, TokenCreate, TokenUpdate, AdminChange };

const idParameter = { name: 'id', in: 'path', required: true, schema: text };
/** An optional query parameter. */
export const query = (parameter: string, schema: object, description?: string) => ({
  name: parameter,
  in: 'query',
  required: false,
  schema,
  ...(description === undefined ? {} : { description }),
});
const pageSize = query('limit', { type: 'integer', minimum: 1, maximum: 1000, default: 100 });
const view = (description: string) => ({ description, content: json(ref('TokenView')) });
const adminOnly = 'Admin tokens only; not counted against the rpm of the token.';

/** The admin API for tokens and the caller's own view (docs/admin-api.md). */
export function adminPaths(errors: ErrorResponses): object {
  const read = errors(['InvalidParameter', 'InvalidApiKey']);
  const byId = errors(['InvalidParameter', 'InvalidApiKey', 'NotFound']);
  const write = errors(['InvalidParameter', 'InvalidApiKey', 'NotFound', 'RequestTooLarge']);
  return {
    '/admin/tokens': {
      post: {
        operationId: 'createToken',
        summary: 'Create a token; its JWT is shown only in this answer',
        description: adminOnly,
        requestBody: { required: true, content: json(ref('TokenCreate')) },
        responses: {
          '201': {
            description: 'The JWT and the stored token.',
            content: json({
              type: 'object',
              properties: { token: { ...text, description: 'the JWT' }, record: ref('TokenView') },
            }),
          },
          ...write,
        },
      },
      get: {
        operationId: 'listTokens',
        summary: 'Tokens, oldest first, a page at a time',
        description: adminOnly,
        parameters: [
          query('account', text),
          query('name', text),
          query('revoked', { enum: ['true', 'false'] }),
          pageSize,
          query('cursor', text, 'next_cursor of the previous page'),
        ],
        responses: {
          '200': {
            description: 'A page of tokens; next_cursor null on the last.',
            content: json({
              type: 'object',
              properties: {
                tokens: { type: 'array', items: ref('TokenView') },
                next_cursor: nullable(text),
              },
            }),
          },
          ...read,
        },
      },
    },
    '/admin/tokens/{id}': {
      parameters: [idParameter],
      get: {
        operationId: 'getToken',
        summary: 'One token',
        responses: { '200': view('The token.'), ...byId },
      },
      patch: {
        operationId: 'updateToken',
        summary: 'Change limits, expiry or name',
        requestBody: { required: true, content: json(ref('TokenUpdate')) },
        responses: { '200': view('The token as changed.'), ...write },
      },
    },
    '/admin/tokens/{id}/revoke': {
      parameters: [idParameter],
      post: {
        operationId: 'revokeToken',
        summary: 'Revoke a token; refused everywhere within IMAGEGATE_TOKEN_CACHE_MS',
        description: 'Revoking twice keeps the first time.',
        responses: { '200': view('The token, revoked.'), ...byId },
      },
    },
    '/admin/changes': {
      get: {
        operationId: 'listAdminChanges',
        summary: 'Who changed which token, newest first',
        parameters: [query('token', text), pageSize],
        responses: {
          '200': {
            description: 'The changes.',
            content: json({
              type: 'object',
              properties: { changes: { type: 'array', items: ref('AdminChange') } },
            }),
          },
          ...read,
        },
      },
    },
    '/me': {
      get: {
        operationId: 'getOwnToken',
        summary: "The caller's own token, for any valid token",
        responses: { '200': view('The caller.'), ...errors(['InvalidApiKey']) },
      },
    },
  };
}
