import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { DeferredLog } from '../support/log.js';
import { type AdmissionServices, openAdmission } from './open-admission.js';
import type { Config } from '../config/config.js';
import { createRouter } from '../channels/create-router.js';
import { LocalEngine } from '../engine/local/local-engine.js';
import type { ReloadableRouter } from '../channels/reloadable-router.js';
import { GenerationPipeline } from '../generation/generation-pipeline.js';
import { readinessOf } from '../health/readiness.js';
import { createInputLoader } from '../inputs/create-input-loader.js';
import { createResultStorage, type ResultStorage } from '../storage/create-result-storage.js';
import { buildApp } from '../http/app.js';
import { PublicOrigins } from '../http/public-origins.js';
import { GatewayMetrics } from '../metrics/gateway-metrics.js';
import { openServices, type Services } from './open-services.js';
import { VERSION } from './version.js';
import { openTasks, type TaskServices } from './open-tasks.js';

export interface Gateway {
  app: FastifyInstance;
  services: Services;
  /** Limits, quota, usage ledger and idempotency; `admission.admission` is the pipeline's stage. */
  admission: AdmissionServices;
  /** Generated images: blob store, signed URLs and the sweeper. */
  storage: ResultStorage;
  /** The channel router: the pipeline's engine, shown at GET /admin/channels, reloaded on SIGHUP. */
  channels: ReloadableRouter;
  /** Asynchronous tasks: the service behind the routes and this node's runner. */
  tasks: TaskServices;
  /** What GET /metrics shows; its gauges are there for the modules that move them. */
  metrics: GatewayMetrics;
  /**
   * Starts listening; returns the address. With port 0 the image URL base follows the real port,
   * and the hosts answers may name are the listening addresses' (PublicOrigins).
   */
  listen(): Promise<string>;
  close(): Promise<void>;
}

/** Wires a whole gateway from its configuration; the server and the tests both start here. */
export async function createGateway(
  config: Config,
  now: () => number = Date.now,
): Promise<Gateway> {
  // The app's logger exists only once the app does; services report through it from then on.
  const log = new DeferredLog();
  // The server checkpoints SQLite's log off the event loop; the CLI's few writes need not.
  const services = await openServices(config, now, log, 'background');
  const admission = await openAdmission({ config, database: services.database, now, log }).catch(
    async (error: unknown) => {
      await services.close();
      throw error;
    },
  );
  const origins = new PublicOrigins({
    publicBaseUrl: config.publicBaseUrlSet ? config.publicBaseUrl : undefined,
    listeningBaseUrl: config.publicBaseUrl,
    host: config.host,
    hosts: config.publicHosts,
  });
  const storage = createResultStorage({
    storage: config.storage,
    publicBaseUrl: () => origins.canonical(),
    isOtherOrigin: (origin) => origins.isAllowedOrigin(origin),
    signingKey: services.keys.imageUrlSigning,
    uploadSigningKey: services.keys.uploadSigning,
    sweepIntervalMs: config.sweepIntervalMs,
    now,
  });
  const { workers, queueLimit } = config.localEngine;
  const localEngine = new LocalEngine({
    ...(workers === undefined ? {} : { workers }),
    ...(queueLimit === undefined ? {} : { queueLimit }),
  });
  const channels = createRouter(config, {
    results: storage.results,
    log,
    now,
    sharedLocalEngine: localEngine,
  });
  const inputs = createInputLoader({
    allowPrivateAddresses: config.allowPrivateImageUrls,
    connectTimeoutMs: config.imageConnectTimeoutMs,
    totalTimeoutMs: config.imageFetchTimeoutMs,
    maxConcurrentFetches: config.maxImageFetches,
    stored: storage.storedInputs,
  });
  const generation = new GenerationPipeline({
    inputs,
    admission: admission.admission,
    engine: channels,
    results: storage.results,
  });
  const tasks = openTasks({
    config,
    database: services.database,
    generation,
    admission: admission.admission,
    tokens: services.tokenVerifier,
    now,
    log,
  });
  const metrics = new GatewayMetrics();
  metrics.observeChannels(() => channels.status());
  metrics.observeLedgerQueue(() => admission.ledger.pending);
  metrics.observeImageFetches(() => inputs.fetches());
  metrics.observeRenderJobs(() => localEngine.jobs());
  const app = buildApp({
    config,
    authenticator: services.tokenVerifier,
    generation,
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
    origins,
    channels,
    ledger: admission.ledger,
    gate: admission.admission,
    modelAccess: admission.admission,
    idempotency: admission.idempotency,
    usage: admission.usage,
    tasks: tasks.service,
    metrics: { gateway: metrics, access: config.metrics },
    now,
  });
  log.target = app.log;
  const server = app;
  storage.sweeper.start(server.log);
  tasks.runner.start();
  return {
    app: server,
    services,
    admission,
    storage,
    channels,
    tasks,
    metrics,
    listen: async () => {
      const address = await server.listen({
        host: config.host,
        port: config.port,
        backlog: config.listenBacklog,
      });
      origins.listening(
        server.addresses().filter((entry): entry is AddressInfo => typeof entry !== 'string'),
      );
      return address;
    },
    close: async () => {
      // In-flight requests and running tasks finish (and record their usage) before the ledger's
      // last flush; tasks get the shutdown budget, then end FAILED with nothing billed.
      channels.drain();
      await Promise.all([server.close(), tasks.runner.stop(config.shutdownTimeoutMs)]);
      await channels.close();
      await admission.close();
      await storage.close();
      await services.close();
    },
  };
}
