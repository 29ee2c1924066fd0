import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { DeferredLog, type Log } from '../support/log.js';
import { type AdmissionServices, openAdmission } from './open-admission.js';
import type { Config } from '../config/config.js';
import type { ReloadableRouter } from '../channels/reloadable-router.js';
import type { ResultStorage } from '../storage/create-result-storage.js';
import { PublicOrigins } from '../http/public-origins.js';
import { GatewayMetrics } from '../metrics/gateway-metrics.js';
import { buildGatewayApp, type GatewayParts } from './build-gateway-app.js';
import { type GenerationParts, openGeneration } from './open-generation.js';
import { openServices, type Services } from './open-services.js';
import { openStorage } from './open-storage.js';
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
  const admission = await openAdmissionOrClose(config, services, now, log);
  const origins = publicOriginsOf(config);
  const storage = openStorage({ config, origins, keys: services.keys, now });
  const generation = openGeneration({ config, storage, admission: admission.admission, now, log });
  const tasks = openTasks({
    config,
    database: services.database,
    generation: generation.generation,
    admission: admission.admission,
    tokens: services.tokenVerifier,
    now,
    log,
  });
  const metrics = gatewayMetricsOf(admission, generation);
  const parts = {
    config,
    services,
    admission,
    storage,
    origins,
    generation,
    tasks,
    metrics,
    log,
    now,
  };
  const app = buildGatewayApp(parts);
  log.target = app.log;
  storage.sweeper.start(app.log);
  tasks.runner.start();
  return {
    app,
    services,
    admission,
    storage,
    channels: generation.channels,
    tasks,
    metrics,
    listen: () => listenOn(app, parts),
    close: () => closeInOrder(app, parts),
  };
}

/** Admission on the services' database; the services are closed again when it cannot open. */
async function openAdmissionOrClose(
  config: Config,
  services: Services,
  now: () => number,
  log: Log,
): Promise<AdmissionServices> {
  return openAdmission({ config, database: services.database, now, log }).catch(
    async (error: unknown) => {
      await services.close();
      throw error;
    },
  );
}

function publicOriginsOf(config: Config): PublicOrigins {
  return new PublicOrigins({
    publicBaseUrl: config.publicBaseUrlSet ? config.publicBaseUrl : undefined,
    listeningBaseUrl: config.publicBaseUrl,
    host: config.host,
    hosts: config.publicHosts,
  });
}

function gatewayMetricsOf(
  admission: AdmissionServices,
  generation: GenerationParts,
): GatewayMetrics {
  const metrics = new GatewayMetrics();
  metrics.observeChannels(() => generation.channels.status());
  metrics.observeLedgerQueue(() => admission.ledger.pending);
  metrics.observeImageFetches(() => generation.inputs.fetches());
  metrics.observeRenderJobs(() => generation.localEngine.jobs());
  return metrics;
}

async function listenOn(app: FastifyInstance, parts: GatewayParts): Promise<string> {
  const { config, origins } = parts;
  const address = await app.listen({
    host: config.host,
    port: config.port,
    backlog: config.listenBacklog,
  });
  origins.listening(
    app.addresses().filter((entry): entry is AddressInfo => typeof entry !== 'string'),
  );
  return address;
}

/**
 * In-flight requests and running tasks finish (and record their usage) before the ledger's last
 * flush; tasks get the shutdown budget, then end FAILED with nothing billed.
 */
async function closeInOrder(app: FastifyInstance, parts: GatewayParts): Promise<void> {
  const { config, generation, tasks, admission, storage, services } = parts;
  generation.channels.drain();
  await Promise.all([app.close(), tasks.runner.stop(config.shutdownTimeoutMs)]);
  await generation.channels.close();
  await admission.close();
  await storage.close();
  await services.close();
}
