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
  reportUnknownSettings(file, env.IMAGEGATE_CONFIG, problems);
  const read = settingReader(env, file, problems);
  // Settings are read in this order, which is the order their problems are listed in.
  const { host, port, dataDir: givenDataDir, databaseUrl } = readTable(read, LISTENING);
  const dataDir = path.resolve(givenDataDir);
  const config: Config = {
    host,
    port,
    dataDir,
    ...readTable(read, REQUEST_HANDLING),
    database:
      databaseUrl === undefined
        ? { kind: 'sqlite', file: path.join(dataDir, 'imagegate.db') }
        : { kind: 'postgres', url: databaseUrl },
    databaseLimits: readTable(read, DATABASE_LIMITS),
    secret: read(SETTINGS.secret),
    externalTokens: readTable(read, EXTERNAL_TOKENS),
    tokenCacheMs: read(SETTINGS.tokenCacheMs),
    logLevel: read(SETTINGS.logLevel),
    metrics: read(SETTINGS.metrics),
    console: read(SETTINGS.console),
    consoleCallsPerMinute: read(SETTINGS.consoleCallsPerMinute),
    ...readPublicOrigins(read, host, port),
    storage: readStorage(read, dataDir, problems),
    sweepIntervalMs: read(SETTINGS.sweepIntervalMs),
    ...readTable(read, IMAGE_INPUTS),
    channels: readChannels(
      file[SETTINGS.channels.file],
      env,
      `${env.IMAGEGATE_CONFIG}: channels`,
      problems,
    ),
    routingDeadlineMs: read(SETTINGS.routingDeadlineMs),
    localEngine: readTable(read, LOCAL_ENGINE),
    tasks: readTable(read, TASKS),
    uploads: readTable(read, UPLOADS),
    admission: readTable(read, ADMISSION),
  };
  checkBodyBudget(config, problems);
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

/** Settings read as they are, each under the name its section of Config gives it. */
const LISTENING = {
  host: SETTINGS.host,
  port: SETTINGS.port,
  dataDir: SETTINGS.dataDir,
  databaseUrl: SETTINGS.databaseUrl,
};

const REQUEST_HANDLING = {
  routePrefix: SETTINGS.routePrefix,
  modelAliases: SETTINGS.modelAliases,
  corsOrigins: SETTINGS.corsOrigins,
  maxBodyBytes: SETTINGS.maxBodyBytes,
  maxInFlightRequests: SETTINGS.maxInFlightRequests,
  maxInFlightBodyBytes: SETTINGS.maxInFlightBodyBytes,
  maxConnections: SETTINGS.maxConnections,
  listenBacklog: SETTINGS.listenBacklog,
  requestTimeoutMs: SETTINGS.requestTimeoutMs,
  shutdownTimeoutMs: SETTINGS.shutdownTimeoutMs,
  lingeringTimeMs: SETTINGS.lingeringTimeMs,
  lingeringTimeoutMs: SETTINGS.lingeringTimeoutMs,
  lingeringMaxBytes: SETTINGS.lingeringMaxBytes,
  maxImageFetches: SETTINGS.maxImageFetches,
};

const DATABASE_LIMITS = {
  poolSize: SETTINGS.databasePoolSize,
  acquireTimeoutMs: SETTINGS.databaseAcquireTimeoutMs,
  statementTimeoutMs: SETTINGS.databaseStatementTimeoutMs,
  lockTimeoutMs: SETTINGS.databaseLockTimeoutMs,
  idleInTransactionTimeoutMs: SETTINGS.databaseIdleInTransactionTimeoutMs,
};

const EXTERNAL_TOKENS = {
  publicKeyFiles: SETTINGS.jwtPublicKeys,
  jwksUrl: SETTINGS.jwksUrl,
  issuer: SETTINGS.jwtIssuer,
  audience: SETTINGS.jwtAudience,
};

const IMAGE_INPUTS = {
  allowPrivateImageUrls: SETTINGS.allowPrivateImageUrls,
  imageConnectTimeoutMs: SETTINGS.imageConnectTimeoutMs,
  imageFetchTimeoutMs: SETTINGS.imageFetchTimeoutMs,
};

const LOCAL_ENGINE = { workers: SETTINGS.localWorkers, queueLimit: SETTINGS.localQueueLimit };

const TASKS = {
  concurrency: SETTINGS.taskConcurrency,
  queueLimit: SETTINGS.taskQueueLimit,
  queueLimitPerToken: SETTINGS.taskQueueLimitPerToken,
  pollMs: SETTINGS.taskPollMs,
  leaseMs: SETTINGS.taskLeaseMs,
};

const UPLOADS = {
  windowMs: SETTINGS.uploadWindowMs,
  mbPerToken: SETTINGS.uploadMbPerToken,
  filesPerToken: SETTINGS.uploadFilesPerToken,
};

const ADMISSION = {
  redisUrl: SETTINGS.redisUrl,
  redisKeyPrefix: SETTINGS.redisKeyPrefix,
  imagePrices: SETTINGS.imagePrices,
  reservationTtlMs: SETTINGS.reservationTtlMs,
  ledgerFlushMs: SETTINGS.ledgerFlushMs,
  ledgerBatchSize: SETTINGS.ledgerBatchSize,
};

type ReadSetting = <T, Default extends T | undefined>(setting: Setting<T, Default>) => T | Default;

type SettingTable = Readonly<Record<string, Setting<unknown, unknown>>>;

type ValuesOf<Table extends SettingTable> = {
  -readonly [Name in keyof Table]: Table[Name] extends Setting<infer T, infer Default>
    ? T | Default
    : never;
};

/** Reads a table's settings in its order. */
function readTable<Table extends SettingTable>(read: ReadSetting, table: Table): ValuesOf<Table> {
  const values: Record<string, unknown> = {};
  for (const [name, setting] of Object.entries(table)) values[name] = read(setting);
  return values as ValuesOf<Table>;
}

function reportUnknownSettings(file: Mapping, fileName: string | undefined, problems: string[]) {
  const known = new Set(Object.values(SETTINGS).map((setting) => setting.file));
  for (const key of Object.keys(file)) {
    if (!known.has(key)) problems.push(`${fileName}: unknown setting "${key}"`);
  }
}

/** A non-empty environment variable wins over the file; a value that does not parse is a problem. */
function settingReader(env: Environment, file: Mapping, problems: string[]): ReadSetting {
  return <T, Default extends T | undefined>(setting: Setting<T, Default>): T | Default => {
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
  };
}

function readPublicOrigins(
  read: ReadSetting,
  host: string,
  port: number,
): Pick<Config, 'publicBaseUrl' | 'publicBaseUrlSet' | 'publicHosts'> {
  return {
    publicBaseUrl: (
      read(SETTINGS.publicBaseUrl) ?? `http://${host.includes(':') ? `[${host}]` : host}:${port}`
    ).replace(/\/+$/, ''),
    publicBaseUrlSet: read(SETTINGS.publicBaseUrl) !== undefined,
    publicHosts: read(SETTINGS.publicHosts),
  };
}

function checkBodyBudget(config: Config, problems: string[]): void {
  if (config.maxInFlightBodyBytes < config.maxBodyBytes)
    problems.push(
      `IMAGEGATE_MAX_INFLIGHT_BODY_BYTES (max_inflight_body_bytes) must be at least IMAGEGATE_MAX_BODY_BYTES (${config.maxBodyBytes}), or the largest request could never be admitted`,
    );
}

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
