import Fastify, { type FastifyInstance, LogController } from 'fastify';
import type { RequestGate } from '../admission/admission.js';
import type { Config } from '../config/config.js';
import { GatewayError } from '../errors/gateway-error.js';
import type { GenerationService } from '../generation/generation-service.js';
import { buildOpenApiDocument } from '../openapi/openapi-document.js';
import type { IdempotencyKeys } from '../idempotency/idempotency-keys.js';
import type { UsageReader } from '../ledger/usage-query.js';
import type { LedgerWriter } from '../ledger/ledger-writer.js';
import type { GatewayMetrics } from '../metrics/gateway-metrics.js';
import { registerAccountedScope } from './accounted-scope.js';
import {
  type ChannelStatusSource,
  registerAdminChannelsRoute,
} from './routes/admin-channels-route.js';
import { handleError, sendError } from './error-reply.js';
import { reportFinishedRequests } from './finished-requests-hook.js';
import { requestIdFor } from './request-id.js';
import { answerClientError } from './client-error.js';
import { InFlightBudget } from './in-flight-budget.js';
import { shedLoad } from './load-shedding.js';
import { refuseEncodedBodies } from './content-encoding.js';
import { SETTINGS } from '../config/settings.js';
import type { Authenticator } from '../auth/authenticator.js';
import {
  registerGenerationMethodGuard,
  registerGenerationRoute,
} from './routes/generation-route.js';
import { registerHealthRoutes } from './routes/health-routes.js';
import { type ImageRouteOptions, registerImageRoutes } from './routes/image-routes.js';
import { registerMetricsRoute } from './routes/metrics-route.js';
import { registerUsageRoute } from './routes/usage-route.js';
import { reportServerTiming } from './server-timing-hook.js';

/** Settings whose defaults suit tests of the bare HTTP layer, which leave them out. */
type LoadSettings = Pick<
  Config,
  'maxInFlightRequests' | 'maxInFlightBodyBytes' | 'maxConnections' | 'requestTimeoutMs'
>;

export interface AppDependencies {
  config: Pick<Config, 'routePrefix' | 'maxBodyBytes' | 'logLevel'> & Partial<LoadSettings>;
  authenticator: Authenticator;
  generation: GenerationService;
  /** Where the ledger rows of requests that billed nothing go. */
  ledger: LedgerWriter;
  checkReady: () => Promise<void>;
  version: string;
  now?: () => number;
  /** Rate and concurrency limits of the generation routes; absent in tests of the bare HTTP layer. */
  gate?: RequestGate;
  /** Idempotency-Key handling of the generation routes; absent in tests of the bare HTTP layer. */
  idempotency?: IdempotencyKeys;
  /** The usage ledger's reader, for GET /admin/usage. */
  usage?: UsageReader;
  /** Serves stored images behind their signed URLs; absent in tests of the bare HTTP layer. */
  images?: ImageRouteOptions;
  /** The running channel set, shown at GET /admin/channels. */
  channels?: ChannelStatusSource;
  /** What every request adds to, and who may read it at GET /metrics; absent: no such route. */
  metrics?: { gateway: GatewayMetrics; access: Config['metrics'] };
  /** Where the JSON log lines go; standard output when absent. */
  logStream?: { write(line: string): void };
}

/** Headers must arrive this fast even when the whole request may take longer. */
const HEADERS_TIMEOUT_MS = 20_000;
/** How often Node checks connections for the request and headers time-outs (default 30 s). */
const TIMEOUT_CHECK_INTERVAL_MS = 1000;

export function buildApp(deps: AppDependencies): FastifyInstance {
  const load: LoadSettings = {
    maxInFlightRequests: deps.config.maxInFlightRequests ?? SETTINGS.maxInFlightRequests.default,
    maxInFlightBodyBytes: deps.config.maxInFlightBodyBytes ?? SETTINGS.maxInFlightBodyBytes.default,
    maxConnections: deps.config.maxConnections ?? SETTINGS.maxConnections.default,
    requestTimeoutMs: deps.config.requestTimeoutMs ?? SETTINGS.requestTimeoutMs.default,
  };
  const app = Fastify({
    logger: {
      level: deps.config.logLevel,
      ...(deps.logStream === undefined ? {} : { stream: deps.logStream }),
    },
    genReqId: requestIdFor,
    requestIdHeader: false,
    // The generation route sets its own, larger limit; everything else takes small bodies.
    bodyLimit: 64 * 1024,
    // Requests that arrive while closing are refused by the load-shedding hook, in our shape.
    return503OnClosing: false,
    requestTimeout: load.requestTimeoutMs,
    http: {
      headersTimeout: Math.min(HEADERS_TIMEOUT_MS, load.requestTimeoutMs),
      connectionsCheckingInterval: TIMEOUT_CHECK_INTERVAL_MS,
    },
    clientErrorHandler: answerClientError,
    // One line per request (reportFinishedRequests) instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
  });
  app.server.maxConnections = load.maxConnections;
  // Only JSON bodies are accepted; without this, text/plain would be parsed into a string.
  app.removeContentTypeParser('text/plain');

  const gauges = deps.metrics?.gateway;
  shedLoad(
    app,
    new InFlightBudget(
      load.maxInFlightRequests,
      load.maxInFlightBodyBytes,
      gauges === undefined
        ? undefined
        : { requests: gauges.inFlightRequests, bodyBytes: gauges.inFlightBodyBytes },
    ),
  );
  refuseEncodedBodies(app);

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  reportFinishedRequests(app, deps.metrics?.gateway);
  app.setErrorHandler(handleError);
  app.setNotFoundHandler((request, reply) =>
    sendError(
      reply,
      new GatewayError('NotFound', `no route for ${request.method} ${request.url.split('?')[0]}`),
    ),
  );

  const openApi = JSON.stringify(buildOpenApiDocument(deps.config.routePrefix, deps.version));
  app.get('/openapi.json', async (_request, reply) =>
    reply.type('application/json; charset=utf-8').send(openApi),
  );
  registerHealthRoutes(app, deps.checkReady);
  if (deps.metrics !== undefined)
    registerMetricsRoute(app, {
      metrics: deps.metrics.gateway,
      access: deps.metrics.access,
      authenticator: deps.authenticator,
    });
  if (deps.images !== undefined) registerImageRoutes(app, deps.images);
  const now = deps.now ?? Date.now;
  if (deps.usage !== undefined)
    registerUsageRoute(app, { authenticator: deps.authenticator, usage: deps.usage, now });
  if (deps.channels !== undefined)
    registerAdminChannelsRoute(app, { authenticator: deps.authenticator, channels: deps.channels });
  registerAccountedScope(
    app,
    {
      authenticator: deps.authenticator,
      ledger: deps.ledger,
      gate: deps.gate,
      idempotency: deps.idempotency,
      now,
    },
    (scope) => {
      reportServerTiming(scope);
      registerGenerationRoute(scope, {
        routePrefix: deps.config.routePrefix,
        maxBodyBytes: deps.config.maxBodyBytes,
        generation: deps.generation,
      });
    },
  );
  registerGenerationMethodGuard(app, deps.config.routePrefix);
  return app;
}
