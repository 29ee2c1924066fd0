import type { ImagePrices } from '../domain/image-prices.js';
import type { ModelAliases } from '../domain/model-aliases.js';
import type { ChannelConfig } from './channel-config.js';

/**
 * Every wait on the database is bounded, so that a database that is down, restarting or frozen,
 * or a node that stalled while holding locks, fails requests quickly instead of queueing them.
 */
export interface DatabaseLimits {
  /** Connections per node (PostgreSQL). */
  poolSize: number;
  /** Longest wait for a pooled connection, or for a new one to connect. */
  acquireTimeoutMs: number;
  /** Longest a statement may run; the client gives up a little later if the server is frozen. */
  statementTimeoutMs: number;
  /** Longest a statement waits for a row lock (PostgreSQL) or the write lock (SQLite). */
  lockTimeoutMs: number;
  /** A session idle inside a transaction this long (its node stalled) is ended, its locks freed. */
  idleInTransactionTimeoutMs: number;
}

/** The gateway's configuration, read and checked once at start by `loadConfig`. */
export interface Config {
  host: string;
  port: number;
  dataDir: string;
  routePrefix: string;
  maxBodyBytes: number;
  maxInFlightRequests: number;
  maxInFlightBodyBytes: number;
  maxConnections: number;
  listenBacklog: number;
  requestTimeoutMs: number;
  shutdownTimeoutMs: number;
  lingeringTimeMs: number;
  lingeringTimeoutMs: number;
  lingeringMaxBytes: number;
  maxImageFetches: number;
  database: { kind: 'sqlite'; file: string } | { kind: 'postgres'; url: string };
  databaseLimits: DatabaseLimits;
  /** Undefined: generated into the data dir on first start. */
  secret: string | undefined;
  externalTokens: {
    publicKeyFiles: string[];
    jwksUrl: string | undefined;
    issuer: string | undefined;
    audience: string | undefined;
  };
  tokenCacheMs: number;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Who may read GET /metrics: an admin token, anyone, or nobody (the route does not exist). */
  metrics: 'admin' | 'public' | 'off';
  /** The web console at /console and the API reference at /docs: served, or not at all. */
  console: 'on' | 'off';
  /** Validations and image previews one token may ask of the console's API a minute. */
  consoleCallsPerMinute: number;
  publicBaseUrl: string;
  /** IMAGEGATE_PUBLIC_BASE_URL was given; otherwise publicBaseUrl is made of host and port. */
  publicBaseUrlSet: boolean;
  /** IMAGEGATE_PUBLIC_HOSTS; undefined: the listening addresses at the port, loopback at any. */
  publicHosts: readonly string[] | undefined;
  storage:
    | { kind: 'disk'; dataDir: string }
    | {
        kind: 's3';
        bucket: string;
        endpoint: string | undefined;
        region: string;
        accessKeyId: string | undefined;
        secretAccessKey: string | undefined;
        forcePathStyle: boolean;
        /** Empty, or ending in `/`. */
        prefix: string;
      };
  /** 0: this node does not sweep expired images. */
  sweepIntervalMs: number;
  allowPrivateImageUrls: boolean;
  imageConnectTimeoutMs: number;
  imageFetchTimeoutMs: number;
  /** Every name a caller may give a model besides its id: the built-in aliases and the file's. */
  modelAliases: ModelAliases;
  /** Origins whose pages may call the gateway from a browser; `['*']` for any, empty for none. */
  corsOrigins: readonly string[];
  /** Upstream channels; the built-in local channel when none are configured. */
  channels: ChannelConfig[];
  routingDeadlineMs: number;
  /** The built-in local engine's worker threads and wait queue; undefined: sized from the cores. */
  localEngine: { workers: number | undefined; queueLimit: number | undefined };
  /** Asynchronous tasks: how many this node runs, the queue bound, the poll interval, the lease. */
  tasks: {
    concurrency: number;
    queueLimit: number;
    /** PENDING tasks per token, unless the token has its own limit. */
    queueLimitPerToken: number;
    pollMs: number;
    leaseMs: number;
  };
  /** Per-token upload bounds, unless the token has its own; counted per window of `windowMs`. */
  uploads: { windowMs: number; mbPerToken: number; filesPerToken: number };
  admission: {
    /** Undefined: rate and concurrency limits are kept in each process. */
    redisUrl: string | undefined;
    redisKeyPrefix: string;
    imagePrices: ImagePrices;
    reservationTtlMs: number;
    ledgerFlushMs: number;
    ledgerBatchSize: number;
  };
}
