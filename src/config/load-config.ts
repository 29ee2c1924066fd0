import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { Config } from './config.js';
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
    const fromEnv = env[setting.env];
    const [source, raw] =
      fromEnv !== undefined && fromEnv !== ''
        ? [setting.env, fromEnv]
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
    allowPrivateImageUrls: read<boolean>('allowPrivateImageUrls') as boolean,
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
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
