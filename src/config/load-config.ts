import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { Config } from './config.js';
import { isMapping, type Mapping } from './mapping.js';
import { readChannels } from './read-channels.js';
import { SETTINGS, type Setting } from './settings.js';

export class ConfigError extends Error {
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super(`invalid configuration:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

type Environment = Readonly<Record<string, string | undefined>>;

/**
 * Reads every setting from the environment, falling back to the file named by IMAGEGATE_CONFIG
 * (YAML or JSON), then to the default. All problems are collected and thrown together, each with
 * the name the operator used. Start-up only: this reads the config file synchronously.
 */
export function loadConfig(env: Environment = process.env): Config {
  const problems: string[] = [];
  const file = readConfigFile(env.IMAGEGATE_CONFIG, problems);
  const known = new Set(Object.values(SETTINGS).map((setting) => setting.file));
  for (const key of Object.keys(file)) {
    if (!known.has(key)) problems.push(`${env.IMAGEGATE_CONFIG}: unknown setting "${key}"`);
  }

  function read<T, Default extends T | undefined>(setting: Setting<T, Default>): T | Default {
    const variable = setting.env;
    const fromEnv = variable === undefined ? undefined : env[variable];
    const [source, raw] =
      variable !== undefined && fromEnv !== undefined && fromEnv !== ''
        ? [variable, fromEnv]
        : [`${env.IMAGEGATE_CONFIG}: ${setting.file}`, file[setting.file]];
    if (raw === undefined || raw === null) return setting.default;
    const parsed = setting.parse(raw);
    if (parsed.ok) return parsed.value;
    problems.push(`${source} ${parsed.problem}`);
    return setting.default;
  }

  const host = read(SETTINGS.host);
  const port = read(SETTINGS.port);
  const dataDir = path.resolve(read(SETTINGS.dataDir));
  const databaseUrl = read(SETTINGS.databaseUrl);
  const config: Config = {
    host,
    port,
    dataDir,
    routePrefix: read(SETTINGS.routePrefix),
    modelAliases: read(SETTINGS.modelAliases),
    corsOrigins: read(SETTINGS.corsOrigins),
    maxBodyBytes: read(SETTINGS.maxBodyBytes),
    maxInFlightRequests: read(SETTINGS.maxInFlightRequests),
    maxInFlightBodyBytes: read(SETTINGS.maxInFlightBodyBytes),
    maxConnections: read(SETTINGS.maxConnections),
    listenBacklog: read(SETTINGS.listenBacklog),
    requestTimeoutMs: read(SETTINGS.requestTimeoutMs),
    shutdownTimeoutMs: read(SETTINGS.shutdownTimeoutMs),
    lingeringTimeMs: read(SETTINGS.lingeringTimeMs),
    lingeringTimeoutMs: read(SETTINGS.lingeringTimeoutMs),
    lingeringMaxBytes: read(SETTINGS.lingeringMaxBytes),
    maxImageFetches: read(SETTINGS.maxImageFetches),
    database:
      databaseUrl === undefined
        ? { kind: 'sqlite', file: path.join(dataDir, 'imagegate.db') }
        : { kind: 'postgres', url: databaseUrl },
    databaseLimits: {
      poolSize: read(SETTINGS.databasePoolSize),
      acquireTimeoutMs: read(SETTINGS.databaseAcquireTimeoutMs),
      statementTimeoutMs: read(SETTINGS.databaseStatementTimeoutMs),
      lockTimeoutMs: read(SETTINGS.databaseLockTimeoutMs),
      idleInTransactionTimeoutMs: read(SETTINGS.databaseIdleInTransactionTimeoutMs),
    },
    secret: read(SETTINGS.secret),
    externalTokens: {
      publicKeyFiles: read(SETTINGS.jwtPublicKeys),
      jwksUrl: read(SETTINGS.jwksUrl),
      issuer: read(SETTINGS.jwtIssuer),
      audience: read(SETTINGS.jwtAudience),
    },
    tokenCacheMs: read(SETTINGS.tokenCacheMs),
    logLevel: read(SETTINGS.logLevel),
    metrics: read(SETTINGS.metrics),
    publicBaseUrl: (
      read(SETTINGS.publicBaseUrl) ?? `http://${host.includes(':') ? `[${host}]` : host}:${port}`
    ).replace(/\/+$/, ''),
    publicBaseUrlSet: read(SETTINGS.publicBaseUrl) !== undefined,
    publicHosts: read(SETTINGS.publicHosts),
    storage: readStorage(read, dataDir, problems),
    sweepIntervalMs: read(SETTINGS.sweepIntervalMs),
    allowPrivateImageUrls: read(SETTINGS.allowPrivateImageUrls),
    imageConnectTimeoutMs: read(SETTINGS.imageConnectTimeoutMs),
    imageFetchTimeoutMs: read(SETTINGS.imageFetchTimeoutMs),
    channels: readChannels(
      file[SETTINGS.channels.file],
      env,
      `${env.IMAGEGATE_CONFIG}: channels`,
      problems,
    ),
    routingDeadlineMs: read(SETTINGS.routingDeadlineMs),
    localEngine: {
      workers: read(SETTINGS.localWorkers),
      queueLimit: read(SETTINGS.localQueueLimit),
    },
    tasks: {
      concurrency: read(SETTINGS.taskConcurrency),
      queueLimit: read(SETTINGS.taskQueueLimit),
      queueLimitPerToken: read(SETTINGS.taskQueueLimitPerToken),
      pollMs: read(SETTINGS.taskPollMs),
      leaseMs: read(SETTINGS.taskLeaseMs),
    },
    uploads: {
      windowMs: read(SETTINGS.uploadWindowMs),
      mbPerToken: read(SETTINGS.uploadMbPerToken),
      filesPerToken: read(SETTINGS.uploadFilesPerToken),
    },
    admission: {
      redisUrl: read(SETTINGS.redisUrl),
      redisKeyPrefix: read(SETTINGS.redisKeyPrefix),
      imagePrices: read(SETTINGS.imagePrices),
      reservationTtlMs: read(SETTINGS.reservationTtlMs),
      ledgerFlushMs: read(SETTINGS.ledgerFlushMs),
      ledgerBatchSize: read(SETTINGS.ledgerBatchSize),
    },
  };
  if (config.maxInFlightBodyBytes < config.maxBodyBytes)
    problems.push(
      `IMAGEGATE_MAX_INFLIGHT_BODY_BYTES (max_inflight_body_bytes) must be at least IMAGEGATE_MAX_BODY_BYTES (${config.maxBodyBytes}), or the largest request could never be admitted`,
    );
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

type ReadSetting = <T, Default extends T | undefined>(setting: Setting<T, Default>) => T | Default;

function readStorage(read: ReadSetting, dataDir: string, problems: string[]): Config['storage'] {
  const kind = read(SETTINGS.storage);
  const s3 = {
    bucket: read(SETTINGS.s3Bucket),
    endpoint: read(SETTINGS.s3Endpoint),
    region: read(SETTINGS.s3Region),
    accessKeyId: read(SETTINGS.s3AccessKeyId),
    secretAccessKey: read(SETTINGS.s3SecretAccessKey),
    forcePathStyle: read(SETTINGS.s3ForcePathStyle),
    prefix: (read(SETTINGS.s3Prefix) ?? '').replace(/([^/])$/, '$1/'),
  };
  if (kind !== 's3') return { kind: 'disk', dataDir };
  if (s3.bucket === undefined)
    problems.push(
      'IMAGEGATE_S3_BUCKET (s3_bucket) must be set when IMAGEGATE_STORAGE (storage) is s3',
    );
  if ((s3.accessKeyId === undefined) !== (s3.secretAccessKey === undefined))
    problems.push(
      'IMAGEGATE_S3_ACCESS_KEY_ID (s3_access_key_id) and IMAGEGATE_S3_SECRET_ACCESS_KEY (s3_secret_access_key) must be set together',
    );
  return { kind: 's3', ...s3, bucket: s3.bucket ?? '' };
}

function readConfigFile(file: string | undefined, problems: string[]): Mapping {
  if (file === undefined || file === '') return {};
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    problems.push(`IMAGEGATE_CONFIG: cannot read ${file}: ${messageOf(error)}`);
    return {};
  }
  try {
    // YAML is a superset of JSON, so one parser reads both.
    const parsed: unknown = parseYaml(text);
    if (parsed === null || parsed === undefined) return {};
    if (!isMapping(parsed)) {
      problems.push(`IMAGEGATE_CONFIG: ${file} must hold a mapping of settings`);
      return {};
    }
    return parsed;
  } catch (error) {
    problems.push(`IMAGEGATE_CONFIG: ${file} is not valid YAML or JSON: ${messageOf(error)}`);
    return {};
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
