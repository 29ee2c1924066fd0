import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { GatewayMetrics } from '../../src/metrics/gateway-metrics.js';
import { silentLog } from '../../src/support/log.js';
import { type AdmissionServices, openAdmission } from '../../src/bootstrap/open-admission.js';
import type { RateLimiter } from '../../src/admission/rate-limiter.js';
import type { TokenLimitChanges } from '../../src/domain/token-limits.js';
import { openServices, type Services } from '../../src/bootstrap/open-services.js';
import { loadConfig } from '../../src/config/load-config.js';
import type { Engine, EngineJob, EngineRun } from '../../src/engine/engine.js';
import { GenerationPipeline } from '../../src/generation/generation-pipeline.js';
import { buildApp } from '../../src/http/app.js';
import type { DatabaseTarget } from '../../src/store/database/database.js';
import { GENERATION_URL } from './requests.js';
import { eventually as waitUntil } from './waits.js';

/** An engine under the test's control: how many images, how long, whether it fails. */
export class FakeEngine implements Engine {
  calls = 0;
  /** Images per call; default the request's `n`. */
  imagesPerCall: number | undefined;
  /** Each call waits for this before answering. */
  gate: Promise<void> | undefined;
  failure: Error | undefined;
  /**
   * When set, images are produced one by one as a local group is: before each, the engine waits
   * for `imageGate(index)`, then yields the image.
   */
  imageGate: ((index: number, job: EngineJob) => Promise<void>) | undefined;

  async *generate(job: EngineJob): EngineRun {
    this.calls++;
    const call = this.calls;
    if (this.gate !== undefined) await this.gate;
    if (this.failure !== undefined) throw this.failure;
    const count = this.imagesPerCall ?? job.request.parameters.n;
    const images = Array.from({ length: count }, (_, index) => ({
      kind: 'upstream' as const,
      url: `https://images.test/${job.requestId}/${call}-${index}.png`,
    }));
    if (this.imageGate !== undefined) {
      for (const [index, image] of images.entries()) {
        await this.imageGate(index, job);
        job.signal.throwIfAborted();
        yield { image, index };
      }
    }
    return {
      images,
      width: job.output.width,
      height: job.output.height,
      channel: 'fake-channel',
      upstreamMs: 7,
    };
  }
}

export interface BillingGateway {
  app: FastifyInstance;
  services: Services;
  admission: AdmissionServices;
  engine: FakeEngine;
  /** Issues a gateway token with the given limits; returns its id and `Authorization` value. */
  token(options?: {
    account?: string;
    admin?: boolean;
    limits?: TokenLimitChanges;
  }): Promise<{ id: string; authorization: string }>;
  close(): Promise<void>;
}

export interface BillingGatewayOptions {
  env?: Record<string, string>;
  database?: DatabaseTarget;
  now?: () => number;
  limiter?: RateLimiter;
  /** Shares this data dir (and so the SQLite file and secret) with another gateway. */
  dataDir?: string;
  /** Silence before a started event stream's keep-alive comment (default 15 s). */
  eventStreamKeepAliveMs?: number;
  /** What every request adds to; none when absent. */
  metrics?: GatewayMetrics;
}

/**
 * A gateway built like createGateway, with real admission, ledger and idempotency over a real
 * database, and a fake engine: admission can be tested before and apart from the real engines.
 */
export async function startBillingGateway(
  options: BillingGatewayOptions = {},
): Promise<BillingGateway> {
  const ownsDataDir = options.dataDir === undefined;
  const dataDir = options.dataDir ?? (await mkdtemp(path.join(tmpdir(), 'imagegate-billing-')));
  const now = options.now ?? Date.now;
  const config = loadConfig({
    IMAGEGATE_DATA_DIR: dataDir,
    IMAGEGATE_LOG_LEVEL: 'silent',
    IMAGEGATE_TOKEN_CACHE_MS: '0',
    IMAGEGATE_LEDGER_FLUSH_MS: '60000',
    PORT: '0',
    ...options.env,
  });
  if (options.database !== undefined) config.database = options.database;
  const services = await openServices(config, now);
  const admission = await openAdmission({
    config,
    database: services.database,
    now,
    log: silentLog,
    ...(options.limiter === undefined ? {} : { limiter: options.limiter }),
  });
  const engine = new FakeEngine();
  const generation = new GenerationPipeline({
    inputs: { load: async () => [] },
    admission: admission.admission,
    engine,
    results: { save: async () => `https://images.test/${randomUUID()}` },
  });
  const app = buildApp({
    config,
    authenticator: services.tokenVerifier,
    generation,
    checkReady: () => services.database.ping(),
    version: 'test',
    ledger: admission.ledger,
    gate: admission.admission,
    modelAccess: admission.admission,
    idempotency: admission.idempotency,
    usage: admission.usage,
    now,
    eventStreamKeepAliveMs: options.eventStreamKeepAliveMs,
    ...(options.metrics === undefined
      ? {}
      : { metrics: { gateway: options.metrics, access: config.metrics } }),
  });
  return {
    app,
    services,
    admission,
    engine,
    token: async (tokenOptions = {}) => {
      const { token, record } = await services.tokenIssuer.issue({
        name: 'billing-test',
        account: tokenOptions.account ?? 'acme',
        admin: tokenOptions.admin ?? false,
        expiresInSeconds: undefined,
      });
      if (tokenOptions.limits !== undefined)
        await admission.limits.update(record.id, tokenOptions.limits);
      return { id: record.id, authorization: `Bearer ${token}` };
    },
    close: async () => {
      await app.close();
      await admission.close();
      await services.close();
      if (ownsDataDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** POSTs `payload` to the generation endpoint, with an Idempotency-Key when `key` is given. */
export function postGeneration(
  gateway: BillingGateway,
  authorization: string,
  payload: string | object,
  key?: string,
) {
  return gateway.app.inject({
    method: 'POST',
    url: GENERATION_URL,
    headers: {
      authorization,
      'content-type': 'application/json',
      ...(key === undefined ? {} : { 'idempotency-key': key }),
    },
    payload,
  });
}

/** Resolves once `check` holds, asking every 10 ms; fails after `timeoutMs`. */
export function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 5000) {
  return waitUntil(check, timeoutMs, 'condition', 10);
}

/** A gate the fake engine waits on, opened by the test. */
export function gate(): { promise: Promise<void>; open(): void } {
  let open: () => void = () => undefined;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}
