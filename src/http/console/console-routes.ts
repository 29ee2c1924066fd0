import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Authenticator } from '../../auth/authenticator.js';
import { aliasesOf, type ModelAliases } from '../../domain/model-aliases.js';
import { MODEL_IDS } from '../../domain/models.js';
import { validateRequest } from '../../validate/validate-request.js';
import type { ConsoleFile } from './console-files.js';
import { consoleContentSecurityPolicy } from './content-security-policy.js';
import { consoleCaller, verifiedCaller } from './console-caller.js';
import { type PreviewRouteOptions, registerPreviewRoute } from './preview-route.js';

export interface ConsoleRouteOptions extends PreviewRouteOptions {
  /** The built console, path under /console/ -> file; empty when it was not built. */
  files: ReadonlyMap<string, ConsoleFile>;
  authenticator: Authenticator;
  modelAliases: ModelAliases;
  /** Origins other than the page's that image URLs and upload hosts may name. */
  extraOrigins: readonly string[];
}

const NOT_BUILT = 'The console is not built: run npm run build.\n';

/** A playground body names its images by URL or oss:// key, never inlines them. */
const VALIDATE_BODY_LIMIT = 1024 * 1024;

/**
 * The web console: its pages and assets under /console/, the API reference at /docs (rendered
 * in the page from /openapi.json by a bundled Swagger UI), and the two small endpoints it needs
 * beside the public API. POST /console/api/validate runs the gateway's one validator on a
 * generation body without admitting, routing or billing it (docs/decisions/0013-console-ui-library.md
 * says why it is not compiled into the page); POST /console/api/preview fetches an image URL as a
 * generation would (preview-route.ts); both count against the caller's console allowance
 * (ConsoleCallBounds). GET /console/api/models names the models and aliases.
 */
export function registerConsoleRoutes(app: FastifyInstance, options: ConsoleRouteOptions): void {
  const policy = consoleContentSecurityPolicy(options.extraOrigins);
  const index = options.files.get('index.html');
  const sendFile = (reply: FastifyReply, file: ConsoleFile) =>
    reply
      .header('content-security-policy', policy)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .header('cache-control', file.cacheControl)
      .type(file.contentType)
      .send(file.body);

  app.get('/console', async (_request, reply) => reply.redirect('/console/', 308));
  app.get('/docs', async (_request, reply) => {
    const docs = options.files.get('docs.html');
    if (docs !== undefined) return sendFile(reply, docs);
    return reply.code(404).type('text/plain; charset=utf-8').send(NOT_BUILT);
  });
  app.get('/console/*', async (request, reply) => {
    const wanted = (request.params as { '*': string })['*'];
    const file = wanted === '' ? index : options.files.get(wanted);
    if (file !== undefined) return sendFile(reply, file);
    if (index === undefined)
      return reply.code(404).type('text/plain; charset=utf-8').send(NOT_BUILT);
    return reply.code(404).type('text/plain; charset=utf-8').send('Not found.\n');
  });

  app.post(
    '/console/api/validate',
    {
      bodyLimit: VALIDATE_BODY_LIMIT,
      onRequest: verifiedCaller(options.authenticator),
    },
    async (request, reply) => {
      reply.headers(await options.bounds.count(consoleCaller(request)));
      const checked = validateRequest(request.body, options.modelAliases);
      reply.header('cache-control', 'no-store');
      return { valid: true, model: checked.model, mode: checked.mode };
    },
  );
  registerPreviewRoute(app, options);
  app.get('/console/api/models', async (_request, reply) => {
    reply.header('cache-control', 'no-cache');
    return {
      models: MODEL_IDS.map((id) => ({ id, aliases: aliasesOf(id, options.modelAliases) })),
    };
  });
}
