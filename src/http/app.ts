import Fastify, { type FastifyInstance, LogController } from 'fastify';
import type { ModelAliases } from '../domain/model-aliases.js';
import type { ModelAccess, RequestGate } from '../admission/admission.js';
import type { Config } from '../config/config.js';
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
import { handleError } from './error-reply.js';
import {
  addUnroutedRequestsHooks,
  frameworkErrorHandler,
  MAX_PATH_PARAMETER_CHARACTERS,
} from './hooks/unrouted-requests.js';
import {
  addFinishedRequestsHooks,
  finishedRequestReporter,
  type ReportFinished,
} from './hooks/finished-requests.js';
import { addRequestIdHooks, requestIdFor } from './hooks/request-id.js';
import { clientErrorAnswerer } from './client-error.js';
import { InFlightBudget } from './in-flight-budget.js';
import { addLoadSheddingHooks } from './hooks/load-shedding.js';
import { addQuietConnectionsHooks } from './hooks/quiet-connections.js';
import { addBusyConnectionsHooks } from './hooks/busy-connections.js';
import { LingeringConnections } from './lingering-close.js';
import { addContentEncodingHooks } from './hooks/content-encoding.js';
import { addCorsHooks } from './hooks/cors.js';
import { KEEP_ALIVE_MS } from './event-stream-reply.js';
import { SETTINGS } from '../config/settings.js';
import type { Authenticator } from '../auth/authenticator.js';
import { OPENAI_FRONT_DOOR } from '../domain/front-door.js';
import {
  dashScopeFrontDoorOf,
  registerGenerationMethodGuard,
  registerGenerationRoute,
} from './routes/generation-route.js';
import { registerHealthRoutes } from './routes/health-routes.js';
import { type ImageRouteOptions, registerImageRoutes } from './routes/image-routes.js';
import { registerMetricsRoute } from './routes/metrics-route.js';
import { PublicOrigins } from './public-origins.js';
import { registerTaskRoutes } from './routes/task-routes.js';
import { registerUploadRoutes, type UploadRouteOptions } from './routes/upload-routes.js';
import { registerUsageRoute } from './routes/usage-route.js';
import {
  registerAdminChangesRoute,
  registerAdminTokensRoute,
} from './routes/admin-tokens-route.js';
import { registerMeRoute } from './routes/me-route.js';
import type { TokenAdmin } from '../tokens/token-admin.js';
import {
  OPENAI_ERROR_SHAPE,
  openAiModelNamedBy,
  registerOpenAiImageRoutes,
  registerOpenAiModelRoutes,
} from './routes/openai-routes.js';
import { type StoredImages, storedImages } from '../storage/stored-images.js';
import type { TaskService } from '../tasks/task-service.js';
import { addServerTimingHooks } from './hooks/server-timing.js';
import { type ConsoleRouteOptions, registerConsoleRoutes } from './console/console-routes.js';

/** Settings whose defaults suit tests of the bare HTTP layer, which leave them out. */
type LoadSettings = Pick<
  Config,
  | 'maxInFlightRequests'
  | 'maxInFlightBodyBytes'
  | 'maxConnections'
  | 'requestTimeoutMs'
  | 'lingeringTimeMs'
  | 'lingeringTimeoutMs'
  | 'lingeringMaxBytes'
>;
/** Settings of the front doors whose defaults suit those tests too. */
type FrontDoorSettings = Pick<Config, 'modelAliases' | 'corsOrigins'>;

export interface AppDependencies {
  config: Pick<Config, 'routePrefix' | 'maxBodyBytes' | 'logLevel'> &
    Partial<LoadSettings> &
    Partial<FrontDoorSettings>;
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
  /** Which models each token may use, for GET /v1/models; absent: every model is listed. */
  modelAccess?: ModelAccess;
  /** Upload certificates and the upload route (docs/api.md §11); absent: no such routes. */
  uploads?: Omit<UploadRouteOptions, 'routePrefix' | 'authenticator' | 'modelAliases' | 'origins'>;
  /** The origin each answer names in its image URLs and upload certificates; absent: as stored. */
  origins?: PublicOrigins;
  /** Gateway tokens as the admin API and GET /me see them; absent: no such routes. */
  tokens?: TokenAdmin;
  /** The running channel set, shown at GET /admin/channels. */
  channels?: ChannelStatusSource;
  /** What every request adds to, and who may read it at GET /metrics; absent: no such route. */
  metrics?: { gateway: GatewayMetrics; access: Config['metrics'] };
  /** Asynchronous tasks: submissions with X-DashScope-Async and the /tasks routes; absent: none. */
  tasks?: TaskService;
  /** Silence before a started event stream's keep-alive comment; 15 s when absent (tests shorten it). */
  eventStreamKeepAliveMs?: number;
  /** The web console at /console (IMAGEGATE_CONSOLE); absent: no such routes. */
  console?: Omit<ConsoleRouteOptions, 'authenticator' | 'modelAliases'>;
  /** Where the JSON log lines go; standard output when absent. */
  logStream?: { write(line: string): void };
}

/** Without the gateway's origins (tests of the bare HTTP layer), URLs are answered as stored. */
const AS_STORED = new PublicOrigins({
  publicBaseUrl: undefined,
  listeningBaseUrl: '',
  host: '',
  hosts: [],
});

/** Without a blob store (tests of the bare HTTP layer) no image can be read back. */
const NO_STORED_IMAGES: StoredImages = { open: async () => undefined };

/** Headers must arrive this fast even when the whole request may take longer. */
const HEADERS_TIMEOUT_MS = 20_000;
/** How often Node checks connections for the request and headers time-outs (default 30 s). */
const TIMEOUT_CHECK_INTERVAL_MS = 1000;

export function buildApp(deps: AppDependencies): FastifyInstance {
  const load = loadSettingsOf(deps.config);
  const reportFinished = finishedRequestReporter(deps.metrics?.gateway);
  const lingering = new LingeringConnections({
    timeMs: load.lingeringTimeMs,
    timeoutMs: load.lingeringTimeoutMs,
    maxBytes: load.lingeringMaxBytes,
  });
  const app = createServer(deps, load, lingering, reportFinished);
  addConnectionHooks(app, deps, load, lingering, reportFinished);
  registerRoutes(app, deps);
  return app;
}

function loadSettingsOf(config: AppDependencies['config']): LoadSettings {
  return {
    maxInFlightRequests: config.maxInFlightRequests ?? SETTINGS.maxInFlightRequests.default,
    maxInFlightBodyBytes: config.maxInFlightBodyBytes ?? SETTINGS.maxInFlightBodyBytes.default,
    maxConnections: config.maxConnections ?? SETTINGS.maxConnections.default,
    requestTimeoutMs: config.requestTimeoutMs ?? SETTINGS.requestTimeoutMs.default,
    lingeringTimeMs: config.lingeringTimeMs ?? SETTINGS.lingeringTimeMs.default,
    lingeringTimeoutMs: config.lingeringTimeoutMs ?? SETTINGS.lingeringTimeoutMs.default,
    lingeringMaxBytes: config.lingeringMaxBytes ?? SETTINGS.lingeringMaxBytes.default,
  };
}

/** Fastify and its HTTP server, with the gateway's time-outs, parser answers and logging. */
function createServer(
  deps: AppDependencies,
  load: LoadSettings,
  lingering: LingeringConnections,
  reportFinished: ReportFinished,
): FastifyInstance {
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
    clientErrorHandler: clientErrorAnswerer(lingering),
    routerOptions: { maxParamLength: MAX_PATH_PARAMETER_CHARACTERS },
    frameworkErrors: frameworkErrorHandler(deps.config.routePrefix, reportFinished),
    // One line per request (addFinishedRequestsHooks) instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
  });
  app.server.maxConnections = load.maxConnections;
  // Only JSON bodies are accepted; without this, text/plain would be parsed into a string.
  app.removeContentTypeParser('text/plain');
  return app;
}

/** The hooks every route shares, in the order they must run. */
function addConnectionHooks(
  app: FastifyInstance,
  deps: AppDependencies,
  load: LoadSettings,
  lingering: LingeringConnections,
  reportFinished: ReportFinished,
): void {
  // Before the load shedder, so that its 503s carry the request id and CORS headers too.
  addRequestIdHooks(app);
  addCorsHooks(app, deps.config.corsOrigins ?? SETTINGS.corsOrigins.default);
  const gauges = deps.metrics?.gateway;
  addLoadSheddingHooks(
    app,
    new InFlightBudget(
      load.maxInFlightRequests,
      load.maxInFlightBodyBytes,
      gauges === undefined
        ? undefined
        : { requests: gauges.inFlightRequests, bodyBytes: gauges.inFlightBodyBytes },
    ),
  );
  addQuietConnectionsHooks(app);
  addBusyConnectionsHooks(app);
  lingering.register(app);
  addContentEncodingHooks(app);
  addFinishedRequestsHooks(app, reportFinished);
  app.setErrorHandler(handleError);
  addUnroutedRequestsHooks(app, deps.config.routePrefix);
}

function registerRoutes(app: FastifyInstance, deps: AppDependencies): void {
  const gauges = deps.metrics?.gateway;
  const modelAliases = deps.config.modelAliases ?? SETTINGS.modelAliases.default;
  const origins = deps.origins ?? AS_STORED;
  const openApi = JSON.stringify(
    buildOpenApiDocument(deps.config.routePrefix, deps.version, modelAliases),
  );
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
  if (deps.uploads !== undefined)
    registerUploadRoutes(app, {
      policies: deps.uploads.policies,
      store: deps.uploads.store,
      origins,
      admission: deps.uploads.admission,
      tokens: deps.uploads.tokens,
      routePrefix: deps.config.routePrefix,
      authenticator: deps.authenticator,
      modelAliases,
      inFlight: gauges?.uploadsInFlight,
    });
  const now = deps.now ?? Date.now;
  if (deps.usage !== undefined)
    registerUsageRoute(app, { authenticator: deps.authenticator, usage: deps.usage, now });
  if (deps.tokens !== undefined) {
    registerAdminTokensRoute(app, { authenticator: deps.authenticator, tokens: deps.tokens, now });
    registerAdminChangesRoute(app, { authenticator: deps.authenticator, tokens: deps.tokens });
    registerMeRoute(app, { authenticator: deps.authenticator, tokens: deps.tokens });
  }
  if (deps.channels !== undefined)
    registerAdminChannelsRoute(app, { authenticator: deps.authenticator, channels: deps.channels });
  registerGenerationDoors(app, deps, { modelAliases, origins, now });
  registerOpenAiModelRoutes(app, {
    routePrefix: deps.config.routePrefix,
    authenticator: deps.authenticator,
    modelAccess: deps.modelAccess,
    modelAliases,
  });
  if (deps.tasks !== undefined)
    registerTaskRoutes(app, {
      routePrefix: deps.config.routePrefix,
      authenticator: deps.authenticator,
      tasks: deps.tasks,
      origins,
    });
  if (deps.console !== undefined)
    registerConsoleRoutes(app, {
      files: deps.console.files,
      extraOrigins: deps.console.extraOrigins,
      bounds: deps.console.bounds,
      inputs: deps.console.inputs,
      authenticator: deps.authenticator,
      modelAliases,
    });
  registerGenerationMethodGuard(app, deps.config.routePrefix);
}

/** The two front doors that generate, each in an accounted scope of its own (its error shape). */
function registerGenerationDoors(
  app: FastifyInstance,
  deps: AppDependencies,
  shared: { modelAliases: ModelAliases; origins: PublicOrigins; now: () => number },
): void {
  const { modelAliases, origins, now } = shared;
  const gauges = deps.metrics?.gateway;
  registerAccountedScope(
    app,
    {
      authenticator: deps.authenticator,
      ledger: deps.ledger,
      gate: deps.gate,
      idempotency: deps.idempotency,
      now,
      frontDoorOf: dashScopeFrontDoorOf,
    },
    (scope) => {
      addServerTimingHooks(scope);
      registerGenerationRoute(scope, {
        routePrefix: deps.config.routePrefix,
        maxBodyBytes: deps.config.maxBodyBytes,
        generation: deps.generation,
        modelAliases,
        tasks: deps.tasks,
        keepAliveMs: deps.eventStreamKeepAliveMs ?? KEEP_ALIVE_MS,
        origins,
        openEventStreams: gauges?.eventStreamsOpen,
      });
    },
  );
  registerAccountedScope(
    app,
    {
      authenticator: deps.authenticator,
      ledger: deps.ledger,
      gate: deps.gate,
      idempotency: deps.idempotency,
      now,
      errorShape: OPENAI_ERROR_SHAPE,
      frontDoorOf: () => OPENAI_FRONT_DOOR,
      modelNamedBy: openAiModelNamedBy,
    },
    (scope) => {
      addServerTimingHooks(scope);
      registerOpenAiImageRoutes(scope, {
        routePrefix: deps.config.routePrefix,
        maxBodyBytes: deps.config.maxBodyBytes,
        generation: deps.generation,
        storedImages:
          deps.images === undefined
            ? NO_STORED_IMAGES
            : storedImages(deps.images.blobs, deps.images.urls),
        now,
        modelAliases,
        origins,
      });
    },
  );
}
