import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { ImagePrices } from '../domain/image-prices.js';
import type { Config } from './config.js';
import { readChannels } from './read-channels.js';
import { SETTINGS, type Setting, type SettingName } from './settings.js';

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

  function read<T>(name: SettingName): T | undefined {
    const setting = SETTINGS[name] as unknown as Setting<T>;
    const fromEnv = setting.env === undefined ? undefined : env[setting.env];
    const [source, raw] =
      fromEnv !== undefined && fromEnv !== ''
        ? [setting.env as string, fromEnv]
        : [`${env.IMAGEGATE_CONFIG}: ${setting.file}`, file[setting.file]];
    if (raw === undefined || raw === null) return setting.default;
    const parsed = setting.parse(raw);
    if (parsed.ok) return parsed.value;
    problems.push(`${source} ${parsed.problem}`);
    return setting.default;
  }

  const host = read<string>('host') as string;
  const port = read<number>('port') as number;
  const dataDir = path.resolve(read<string>('dataDir') as string);
  const databaseUrl = read<string>('databaseUrl');
  const config: Config = {
    host,
    port,
    dataDir,
    routePrefix: read<string>('routePrefix') as string,
    maxBodyBytes: read<number>('maxBodyBytes') as number,
    database:
      databaseUrl === undefined
        ? { kind: 'sqlite', file: path.join(dataDir, 'imagegate.db') }
        : { kind: 'postgres', url: databaseUrl },
    secret: read<string>('secret'),
    externalTokens: {
      publicKeyFiles: read<string[]>('jwtPublicKeys') ?? [],
      jwksUrl: read<string>('jwksUrl'),
      issuer: read<string>('jwtIssuer'),
      audience: read<string>('jwtAudience'),
    },
    tokenCacheMs: read<number>('tokenCacheMs') as number,
    logLevel: read<Config['logLevel']>('logLevel') as Config['logLevel'],
    publicBaseUrl: (
      read<string>('publicBaseUrl') ?? `http://${host.includes(':') ? `[${host}]` : host}:${port}`
    ).replace(/\/+$/, ''),
    storage: readStorage(read, dataDir, problems),
    sweepIntervalMs: read<number>('sweepIntervalMs') as number,
    allowPrivateImageUrls: read<boolean>('allowPrivateImageUrls') as boolean,
    imageConnectTimeoutMs: read<number>('imageConnectTimeoutMs') as number,
    imageFetchTimeoutMs: read<number>('imageFetchTimeoutMs') as number,
    channels: readChannels(
      file[SETTINGS.channels.file],
      env,
      `${env.IMAGEGATE_CONFIG}: channels`,
      problems,
    ),
    routingDeadlineMs: read<number>('routingDeadlineMs') as number,
    admission: {
      redisUrl: read<string>('redisUrl'),
      redisKeyPrefix: read<string>('redisKeyPrefix') as string,
      imagePrices: read<ImagePrices>('imagePrices') as ImagePrices,
      reservationTtlMs: read<number>('reservationTtlMs') as number,
      ledgerFlushMs: read<number>('ledgerFlushMs') as number,
      ledgerBatchSize: read<number>('ledgerBatchSize') as number,
    },
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

type ReadSetting = <T>(name: SettingName) => T | undefined;

function readStorage(read: ReadSetting, dataDir: string, problems: string[]): Config['storage'] {
  const kind = read<'disk' | 's3'>('storage');
  const s3 = {
    bucket: read<string>('s3Bucket'),
    endpoint: read<string>('s3Endpoint'),
    region: read<string>('s3Region') as string,
    accessKeyId: read<string>('s3AccessKeyId'),
    secretAccessKey: read<string>('s3SecretAccessKey'),
    forcePathStyle: read<boolean>('s3ForcePathStyle') as boolean,
    prefix: (read<string>('s3Prefix') ?? '').replace(/([^/])$/, '$1/'),
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

function readConfigFile(file: string | undefined, problems: string[]): Record<string, unknown> {
  if (file === undefined || file === '') return {};
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    problems.push(`IMAGEGATE_CONFIG: cannot read ${file}: ${(error as Error).message}`);
    return {};
  }
  try {
    // YAML is a superset of JSON, so one parser reads both.
    const parsed: unknown = parseYaml(text);
    if (parsed === null || parsed === undefined) return {};
    if (typeof parsed !== 'object' || Array.isArray(parsed)) {
      problems.push(`IMAGEGATE_CONFIG: ${file} must hold a mapping of settings`);
      return {};
    }
    return parsed as Record<string, unknown>;
  } catch (error) {
    problems.push(
      `IMAGEGATE_CONFIG: ${file} is not valid YAML or JSON: ${(error as Error).message}`,
    );
    return {};
  }
}
