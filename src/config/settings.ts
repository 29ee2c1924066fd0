import {
  booleanSetting,
  enumSetting,
  integerSetting,
  listSetting,
  type SettingParser,
  stringSetting,
  urlSetting,
} from './setting-types.js';

export interface Setting<T> {
  /** Environment variable. */
  env: string;
  /** Key in the config file named by IMAGEGATE_CONFIG. */
  file: string;
  parse: SettingParser<T>;
  /** Undefined means "not set" is a valid state, described in the docs. */
  default: T | undefined;
  description: string;
}

function setting<T>(definition: Setting<T>): Setting<T> {
  return definition;
}

/** 9 images of 20 MiB as base64 data URLs (251,658,252 bytes) plus room for the rest of the body. */
export const DEFAULT_MAX_BODY_BYTES = 256 * 1024 * 1024;

/**
 * Every setting the gateway reads. docs/configuration.md documents each and a test keeps them in
 * step. Order here is the order problems are reported in.
 */
export const SETTINGS = {
  host: setting({
    env: 'HOST',
    file: 'host',
    parse: stringSetting(/^\S+$/, 'a host name or address'),
    default: '127.0.0.1',
    description: 'Address to listen on.',
  }),
  port: setting({
    env: 'PORT',
    file: 'port',
    parse: integerSetting(0, 65535),
    default: 8080,
    description: 'TCP port to listen on (0 picks a free one).',
  }),
  dataDir: setting({
    env: 'IMAGEGATE_DATA_DIR',
    file: 'data_dir',
    parse: stringSetting(/^.+$/, 'a directory path'),
    default: './data',
    description: 'Where the embedded database, the generated signing secret and local images live.',
  }),
  routePrefix: setting({
    env: 'IMAGEGATE_ROUTE_PREFIX',
    file: 'route_prefix',
    parse: stringSetting(
      /^(\/[A-Za-z0-9._~-]+)*$/,
      'empty or a path such as /vendor, without a trailing slash',
    ),
    default: '/vendor',
    description:
      'Prefix of the generation route. The route also answers without a prefix, at /api/v1/..., for DashScope SDKs.',
  }),
  maxBodyBytes: setting({
    env: 'IMAGEGATE_MAX_BODY_BYTES',
    file: 'max_body_bytes',
    parse: integerSetting(1024, 1024 * 1024 * 1024),
    default: DEFAULT_MAX_BODY_BYTES,
    description:
      'Largest request body accepted; larger bodies get 413 RequestTooLarge. The default admits 9 images of 20 MB as base64.',
  }),
  databaseUrl: setting({
    env: 'IMAGEGATE_DATABASE_URL',
    file: 'database_url',
    parse: urlSetting(['postgres:', 'postgresql:']),
    default: undefined,
    description: 'PostgreSQL connection URL. Unset: SQLite at <data_dir>/imagegate.db.',
  }),
  secret: setting({
    env: 'IMAGEGATE_SECRET',
    file: 'secret',
    parse: stringSetting(/^.{32,}$/, 'at least 32 characters'),
    default: undefined,
    description:
      'Secret that signs issued tokens and image URLs. Unset: generated on first start into <data_dir>/secret (mode 0600). Every node of a cluster needs the same one.',
  }),
  jwtPublicKeys: setting({
    env: 'IMAGEGATE_JWT_PUBLIC_KEYS',
    file: 'jwt_public_keys',
    parse: listSetting(),
    default: [],
    description:
      'Paths of PEM public keys (RS256 or ES256) whose tokens are accepted, for tokens issued elsewhere.',
  }),
  jwksUrl: setting({
    env: 'IMAGEGATE_JWKS_URL',
    file: 'jwks_url',
    parse: urlSetting(['https:', 'http:']),
    default: undefined,
    description: 'A JWKS URL whose RS256/ES256 keys are accepted, for tokens issued elsewhere.',
  }),
  jwtIssuer: setting({
    env: 'IMAGEGATE_JWT_ISSUER',
    file: 'jwt_issuer',
    parse: stringSetting(/^.+$/, 'a string'),
    default: undefined,
    description: 'When set, tokens from external keys must carry this `iss`.',
  }),
  jwtAudience: setting({
    env: 'IMAGEGATE_JWT_AUDIENCE',
    file: 'jwt_audience',
    parse: stringSetting(/^.+$/, 'a string'),
    default: undefined,
    description: 'When set, tokens from external keys must carry this `aud`.',
  }),
  tokenCacheMs: setting({
    env: 'IMAGEGATE_TOKEN_CACHE_MS',
    file: 'token_cache_ms',
    parse: integerSetting(0, 600_000),
    default: 5000,
    description:
      'How long a node remembers a token row; a revocation made on another node or by the CLI takes effect within this time. 0 reads the database on every request.',
  }),
  logLevel: setting({
    env: 'IMAGEGATE_LOG_LEVEL',
    file: 'log_level',
    parse: enumSetting(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const),
    default: 'info',
    description: 'Log level of the JSON logs on stdout.',
  }),
  publicBaseUrl: setting({
    env: 'IMAGEGATE_PUBLIC_BASE_URL',
    file: 'public_base_url',
    parse: urlSetting(['http:', 'https:']),
    default: undefined,
    description: 'Base of the image URLs handed to callers. Unset: http://<host>:<port>.',
  }),
  allowPrivateImageUrls: setting({
    env: 'IMAGEGATE_ALLOW_PRIVATE_IMAGE_URLS',
    file: 'allow_private_image_urls',
    parse: booleanSetting(),
    default: false,
    description:
      'Lets input image URLs point at loopback, private and link-local addresses. For local development and tests only.',
  }),
} as const;

export type SettingName = keyof typeof SETTINGS;
