import type { FastifyInstance } from 'fastify';
import type { Config } from '../config/config.js';
import { ConsoleCallBounds } from '../admission/console-call-bounds.js';
import { readinessOf } from '../health/readiness.js';
import { type AppDependencies, buildApp } from '../http/app.js';
import { BUILT_CONSOLE_DIRECTORY, readConsoleFiles } from '../http/console/console-files.js';
import type { PublicOrigins } from '../http/public-origins.js';
import type { GatewayMetrics } from '../metrics/gateway-metrics.js';
import type { ResultStorage } from '../storage/create-result-storage.js';
import type { AdmissionServices } from './open-admission.js';
import type { GenerationParts } from './open-generation.js';
import type { Services } from './open-services.js';
import type { TaskServices } from './open-tasks.js';
import { VERSION } from './version.js';
import type { Log } from '../support/log.js';
import { TokenAdmin } from '../tokens/token-admin.js';
import { SqlAdminChangeStore } from '../store/admin-change-store.js';
import { loggedChanges } from '../tokens/admin-change-log.js';

export interface GatewayParts {
  config: Config;
  services: Services;
  admission: AdmissionServices;
  storage: ResultStorage;
  origins: PublicOrigins;
  generation: GenerationParts;
  tasks: TaskServices;
  metrics: GatewayMetrics;
  /** Where admin changes to tokens are logged: the app's logger once it exists. */
  log: Log;
  now: () => number;
}

/** The HTTP app over the gateway's parts: each route gets the part it serves. */
export function buildGatewayApp(parts: GatewayParts): FastifyInstance {
  const { config, services, admission, storage, generation, now } = parts;
  const changeStore = new SqlAdminChangeStore(services.database.db);
  return buildApp({
    config,
    authenticator: services.tokenVerifier,
    generation: generation.generation,
    checkReady: readinessOf({
      database: () => services.database.ping(),
      storage: () => storage.blobs.checkReady(),
    }),
    version: VERSION,
    images: { blobs: storage.blobs, urls: storage.urls },
    uploads: {
      ...storage.uploads,
      admission: admission.uploads,
      tokens: services.tokenVerifier,
    },
    origins: parts.origins,
    channels: generation.channels,
    ledger: admission.ledger,
    gate: admission.admission,
    modelAccess: admission.admission,
    idempotency: admission.idempotency,
    usage: admission.usage,
    tokens: new TokenAdmin({
      issuer: services.tokenIssuer,
      tokens: services.tokenStore,
      limits: admission.limits,
      changes: loggedChanges(parts.log, changeStore),
      history: changeStore,
      now,
      forget: (tokenId) => {
        services.tokenRows.forget(tokenId);
        admission.cachedLimits.forget(tokenId);
      },
    }),
    tasks: parts.tasks.service,
    metrics: { gateway: parts.metrics, access: config.metrics },
    console: config.console === 'on' ? consoleOf(parts) : undefined,
    now,
  });
}

/**
 * The built console, the public base URL's origin when it is set (it may be another host), the
 * bounds on its calls and the inputs stage its previews load through.
 */
function consoleOf(parts: GatewayParts): NonNullable<AppDependencies['console']> {
  const { config } = parts;
  return {
    files: readConsoleFiles(BUILT_CONSOLE_DIRECTORY),
    extraOrigins: config.publicBaseUrlSet ? [new URL(config.publicBaseUrl).origin] : [],
    bounds: new ConsoleCallBounds({
      limiter: parts.admission.limiter,
      callsPerMinute: config.consoleCallsPerMinute,
      log: parts.log,
    }),
    inputs: parts.generation.inputs,
  };
}
