import {
  booleanSetting,
  enumSetting,
  integerSetting,
  listSetting,
  type SettingParser,
  stringSetting,
  urlSetting,
} from './setting-types.js';
import { corsOriginsSetting } from './cors-origins-setting.js';
import { publicHostsSetting } from './public-hosts-setting.js';
import { priceTableSetting } from './price-setting.js';
import { modelAliasesSetting } from './model-aliases-setting.js';
import { DEFAULT_MODEL_ALIASES } from '../domain/model-aliases.js';

/** A setting whose value is a T; one without a default reads as `T | undefined`. */
export interface Setting<T, Default extends T | undefined = T | undefined> {
  /** Environment variable; undefined for a structured setting only the config file can hold. */
  env: string | undefined;
  /** Key in the config file named by IMAGEGATE_CONFIG. */
  file: string;
  parse: SettingParser<T>;
  /** Undefined means "not set" is a valid state, described in the docs. */
  default: Default;
  description: string;
}

function setting<T>(definition: Setting<T, undefined>): Setting<T, undefined>;
function setting<T>(definition: Setting<T, NoInfer<T>>): Setting<T, T>;
function setting<T>(definition: Setting<T>): Setting<T> {
  return definition;
}

/** 9 images of 20 MiB as base64 data URLs (251,658,252 bytes) plus room for the rest of the body. */
export const DEFAULT_MAX_BODY_BYTES = 256 * 1024 * 1024;

/**
 * Every setting the gateway reads. docs/configuration.md documents each and a test keeps them in
 * step.
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
  modelAliases: setting({
    env: undefined,
    file: 'model_aliases',
    parse: modelAliasesSetting(),
    default: DEFAULT_MODEL_ALIASES,
    description:
      'More names for the models: a mapping of alias to model id, added to the built-in aliases wan2.7-image-pro and qwen-image-2.0-pro. File only.',
  }),
  corsOrigins: setting({
    env: 'IMAGEGATE_CORS_ORIGINS',
    file: 'cors_origins',
    parse: corsOriginsSetting(),
    default: [],
    description:
      'Origins whose browser pages may call the gateway (CORS): a comma-separated list such as https://app.example.com, or * for any origin. Empty: no CORS headers.',
  }),
  maxBodyBytes: setting({
    env: 'IMAGEGATE_MAX_BODY_BYTES',
    file: 'max_body_bytes',
    parse: integerSetting(1024, 1024 * 1024 * 1024),
    default: DEFAULT_MAX_BODY_BYTES,
    description:
      'Largest request body accepted; larger bodies get 413 RequestTooLarge. The default admits 9 images of 20 MB as base64.',
  }),
  maxInFlightRequests: setting({
    env: 'IMAGEGATE_MAX_INFLIGHT_REQUESTS',
    file: 'max_inflight_requests',
    parse: integerSetting(1, 1_000_000),
    default: 1024,
    description:
      'Requests served at once by this node; past it a request gets 503 Overloaded with Retry-After before its body is read.',
  }),
  maxInFlightBodyBytes: setting({
    env: 'IMAGEGATE_MAX_INFLIGHT_BODY_BYTES',
    file: 'max_inflight_body_bytes',
    parse: integerSetting(1024, 64 * 1024 * 1024 * 1024),
    default: 2 * DEFAULT_MAX_BODY_BYTES,
    description:
      'Bytes of request bodies held at once (declared by Content-Length, or counted as they stream); past it 503 Overloaded before the body is read. At least IMAGEGATE_MAX_BODY_BYTES.',
  }),
  maxConnections: setting({
    env: 'IMAGEGATE_MAX_CONNECTIONS',
    file: 'max_connections',
    parse: integerSetting(1, 10_000_000),
    default: 10_000,
    description:
      'Open client connections; further ones are refused by the server. Keep it under the file descriptor limit (ulimit -n).',
  }),
  listenBacklog: setting({
    env: 'IMAGEGATE_LISTEN_BACKLOG',
    file: 'listen_backlog',
    parse: integerSetting(1, 65_535),
    default: 4096,
    description:
      "New connections the kernel completes and holds until the process accepts them (capped by the kernel's net.core.somaxconn); past it a connection's SYN is dropped and its client tries again a second later.",
  }),
  requestTimeoutMs: setting({
    env: 'IMAGEGATE_REQUEST_TIMEOUT_MS',
    file: 'request_timeout_ms',
    parse: integerSetting(1000, 3_600_000),
    default: 120_000,
    description:
      'Time for a request to arrive whole (headers within 20 s of it); a slower one gets 408 RequestTimeout and its connection is closed.',
  }),
  shutdownTimeoutMs: setting({
    env: 'IMAGEGATE_SHUTDOWN_TIMEOUT_MS',
    file: 'shutdown_timeout_ms',
    parse: integerSetting(0, 3_600_000),
    default: 10_000,
    description:
      'On SIGTERM or SIGINT, how long requests in flight may finish before their connections are closed; then the ledger is flushed and the process exits 0.',
  }),
  lingeringTimeMs: setting({
    env: 'IMAGEGATE_LINGERING_TIME_MS',
    file: 'lingering_time_ms',
    parse: integerSetting(0, 600_000),
    default: 30_000,
    description:
      'After an answer sent before its request body was read (a refusal), how long the rest of the body is still read and dropped so that the caller can read the answer; then the connection is closed.',
  }),
  lingeringTimeoutMs: setting({
    env: 'IMAGEGATE_LINGERING_TIMEOUT_MS',
    file: 'lingering_timeout_ms',
    parse: integerSetting(0, 600_000),
    default: 5000,
    description:
      'While a refused body is read and dropped, the longest wait for its next bytes before the connection is closed.',
  }),
  lingeringMaxBytes: setting({
    env: 'IMAGEGATE_LINGERING_MAX_BYTES',
    file: 'lingering_max_bytes',
    parse: integerSetting(0, 64 * 1024 * 1024 * 1024),
    default: 64 * 1024 * 1024,
    description:
      'Most bytes of a refused body read and dropped after its answer before the connection is closed. They are never held or counted in the in-flight budget.',
  }),
  maxImageFetches: setting({
    env: 'IMAGEGATE_MAX_IMAGE_FETCHES',
    file: 'max_image_fetches',
    parse: integerSetting(1, 10_000),
    default: 32,
    description:
      'Input image URLs fetched at once by this node (each request fetches at most 3 at once); the rest wait their turn.',
  }),
  databaseUrl: setting({
    env: 'IMAGEGATE_DATABASE_URL',
    file: 'database_url',
    parse: urlSetting(['postgres:', 'postgresql:']),
    default: undefined,
    description: 'PostgreSQL connection URL. Unset: SQLite at <data_dir>/imagegate.db.',
  }),
  databasePoolSize: setting({
    env: 'IMAGEGATE_DB_POOL_SIZE',
    file: 'db_pool_size',
    parse: integerSetting(1, 1000),
    default: 10,
    description:
      'PostgreSQL connections per node; usage reports take at most one of them and task listings a quarter (at least one); from 3 up, the request path always has one.',
  }),
  databaseAcquireTimeoutMs: setting({
    env: 'IMAGEGATE_DB_ACQUIRE_TIMEOUT_MS',
    file: 'db_acquire_timeout_ms',
    parse: integerSetting(100, 600000),
    default: 2000,
    description:
      'Longest wait for a pooled PostgreSQL connection (or for a new one to connect); past it the request gets 503 Overloaded.',
  }),
  databaseStatementTimeoutMs: setting({
    env: 'IMAGEGATE_DB_STATEMENT_TIMEOUT_MS',
    file: 'db_statement_timeout_ms',
    parse: integerSetting(100, 600000),
    default: 5000,
    description:
      'Longest a database statement may run (PostgreSQL statement_timeout; the client stops waiting 1 s later, for a frozen server).',
  }),
  databaseLockTimeoutMs: setting({
    env: 'IMAGEGATE_DB_LOCK_TIMEOUT_MS',
    file: 'db_lock_timeout_ms',
    parse: integerSetting(100, 600000),
    default: 2000,
    description:
      "Longest a statement waits for a row lock (PostgreSQL lock_timeout) or for SQLite's write lock.",
  }),
  databaseIdleInTransactionTimeoutMs: setting({
    env: 'IMAGEGATE_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS',
    file: 'db_idle_in_transaction_timeout_ms',
    parse: integerSetting(100, 600000),
    default: 5000,
    description:
      'A PostgreSQL session idle inside a transaction this long (its node stalled) is ended by the server, and its locks freed.',
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
  metrics: setting({
    env: 'IMAGEGATE_METRICS',
    file: 'metrics',
    parse: enumSetting(['admin', 'public', 'off'] as const),
    default: 'admin',
    description:
      'Who may read GET /metrics (Prometheus text format): admin (an admin token), public (anyone who reaches the port) or off.',
  }),
  console: setting({
    env: 'IMAGEGATE_CONSOLE',
    file: 'console',
    parse: enumSetting(['on', 'off'] as const),
    default: 'on',
    description:
      'The web console at /console, its endpoints POST /console/api/validate and POST /console/api/preview and the API reference at /docs: on, or off (those paths answer 404).',
  }),
  consoleCallsPerMinute: setting({
    env: 'IMAGEGATE_CONSOLE_CALLS_PER_MINUTE',
    file: 'console_calls_per_minute',
    parse: integerSetting(1, 1_000_000),
    default: 600,
    description:
      'Console calls (POST /console/api/validate and /console/api/preview) one token may make a minute, apart from its request rate; past it 429 Throttling.RateQuota with Retry-After.',
  }),
  publicBaseUrl: setting({
    env: 'IMAGEGATE_PUBLIC_BASE_URL',
    file: 'public_base_url',
    parse: urlSetting(['http:', 'https:']),
    default: undefined,
    description:
      "Base of the image URLs and upload certificates' upload_host handed to callers. Unset: http://<the request's Host> when that Host is one of public_hosts, http://<host>:<port> otherwise.",
  }),
  publicHosts: setting({
    env: 'IMAGEGATE_PUBLIC_HOSTS',
    file: 'public_hosts',
    parse: publicHostsSetting(),
    default: undefined,
    description:
      'Without a public base URL: the Host values (host or host:port) whose requests get URLs naming that host. Unset: the addresses the server listens on at its port, and localhost, 127.0.0.1 and [::1] at any port.',
  }),
  storage: setting({
    env: 'IMAGEGATE_STORAGE',
    file: 'storage',
    parse: enumSetting(['disk', 's3'] as const),
    default: 'disk',
    description:
      'Where generated images live: disk (under <data_dir>/images) or s3 (an S3-compatible bucket). Every node of a cluster needs s3.',
  }),
  s3Bucket: setting({
    env: 'IMAGEGATE_S3_BUCKET',
    file: 's3_bucket',
    parse: stringSetting(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'a bucket name'),
    default: undefined,
    description: 'Bucket for generated images. Required when storage is s3.',
  }),
  s3Endpoint: setting({
    env: 'IMAGEGATE_S3_ENDPOINT',
    file: 's3_endpoint',
    parse: urlSetting(['http:', 'https:']),
    default: undefined,
    description:
      'Endpoint of an S3-compatible server (MinIO, R2, Ceph, ...). Unset: AWS S3 for the region.',
  }),
  s3Region: setting({
    env: 'IMAGEGATE_S3_REGION',
    file: 's3_region',
    parse: stringSetting(/^[A-Za-z0-9-]+$/, 'a region name such as us-east-1'),
    default: 'us-east-1',
    description: 'Region of the bucket (signs the requests; most S3-compatible servers ignore it).',
  }),
  s3AccessKeyId: setting({
    env: 'IMAGEGATE_S3_ACCESS_KEY_ID',
    file: 's3_access_key_id',
    parse: stringSetting(/^\S+$/, 'an access key id'),
    default: undefined,
    description:
      'Access key id; set together with the secret access key. Both unset: the AWS SDK default credential chain (environment, profile, instance role).',
  }),
  s3SecretAccessKey: setting({
    env: 'IMAGEGATE_S3_SECRET_ACCESS_KEY',
    file: 's3_secret_access_key',
    parse: stringSetting(/^\S+$/, 'a secret access key'),
    default: undefined,
    description: 'Secret access key; set together with the access key id.',
  }),
  s3ForcePathStyle: setting({
    env: 'IMAGEGATE_S3_FORCE_PATH_STYLE',
    file: 's3_force_path_style',
    parse: booleanSetting(),
    default: false,
    description:
      'Address objects as <endpoint>/<bucket>/<key> instead of <bucket>.<endpoint>/<key>; most S3-compatible servers need true.',
  }),
  s3Prefix: setting({
    env: 'IMAGEGATE_S3_PREFIX',
    file: 's3_prefix',
    parse: stringSetting(
      /^[A-Za-z0-9_-][A-Za-z0-9._-]*(\/[A-Za-z0-9_-][A-Za-z0-9._-]*)*\/?$/,
      'a key prefix such as imagegate/ (letters, digits, ".", "_", "-" and "/"; no segment starting with ".")',
    ),
    default: undefined,
    description:
      'Prefix of every object key, so the bucket can be shared; a trailing "/" is added when missing. Unset: keys start at the bucket root.',
  }),
  sweepIntervalMs: setting({
    env: 'IMAGEGATE_SWEEP_INTERVAL_MS',
    file: 'sweep_interval_ms',
    parse: integerSetting(0, 24 * 60 * 60 * 1000),
    default: 10 * 60 * 1000,
    description:
      'How often this node deletes expired images. 0 disables sweeping on this node (another node or a bucket lifecycle rule must do it).',
  }),
  redisUrl: setting({
    env: 'IMAGEGATE_REDIS_URL',
    file: 'redis_url',
    parse: urlSetting(['redis:', 'rediss:']),
    default: undefined,
    description:
      'Redis for rate and concurrency limits shared by every node. Unset: limits are kept in each process.',
  }),
  redisKeyPrefix: setting({
    env: 'IMAGEGATE_REDIS_KEY_PREFIX',
    file: 'redis_key_prefix',
    parse: stringSetting(/^[A-Za-z0-9:._-]{1,64}$/, 'up to 64 letters, digits and ":._-"'),
    default: 'imagegate:',
    description:
      'Prefix of every Redis key, so that several gateway deployments can share one Redis.',
  }),
  imagePrices: setting({
    env: 'IMAGEGATE_IMAGE_PRICES',
    file: 'image_prices',
    parse: priceTableSetting(),
    default: {},
    description:
      'Price of one generated image per model, recorded as the cost in the usage ledger: model=price pairs, comma-separated.',
  }),
  reservationTtlMs: setting({
    env: 'IMAGEGATE_RESERVATION_TTL_MS',
    file: 'reservation_ttl_ms',
    parse: integerSetting(3000, 3_600_000),
    default: 60_000,
    description:
      'How long a quota reservation, concurrency slot or running idempotency claim survives a node that died; live nodes renew theirs every third of it.',
  }),
  taskConcurrency: setting({
    env: 'IMAGEGATE_TASK_CONCURRENCY',
    file: 'task_concurrency',
    parse: integerSetting(0, 1000),
    default: 4,
    description:
      'Asynchronous tasks this node runs at once. 0: this node accepts and answers for tasks but runs none (another node must).',
  }),
  localWorkers: setting({
    env: 'IMAGEGATE_LOCAL_WORKERS',
    file: 'local_workers',
    parse: integerSetting(1, 256),
    default: undefined,
    description:
      'Worker threads of the built-in local engine. Unset: one fewer than the cores, at least one.',
  }),
  localQueueLimit: setting({
    env: 'IMAGEGATE_LOCAL_QUEUE_LIMIT',
    file: 'local_queue_limit',
    parse: integerSetting(0, 100_000),
    default: undefined,
    description:
      'Local-engine jobs that may wait for a turn while others run; one more gets 503 Overloaded at once. Unset: 16 per worker.',
  }),
  taskQueueLimit: setting({
    env: 'IMAGEGATE_TASK_QUEUE_LIMIT',
    file: 'task_queue_limit',
    parse: integerSetting(1, 1_000_000),
    default: 1000,
    description:
      'PENDING tasks the whole deployment holds; past it a submission gets 503 Overloaded with Retry-After.',
  }),
  taskQueueLimitPerToken: setting({
    env: 'IMAGEGATE_TASK_QUEUE_LIMIT_PER_TOKEN',
    file: 'task_queue_limit_per_token',
    parse: integerSetting(1, 1_000_000),
    default: 100,
    description:
      "PENDING tasks one token may hold (a token's own limit, `--pending-tasks`, overrides it); past it that token's submission gets 429 Throttling.RateQuota with Retry-After, and other tokens' are unaffected.",
  }),
  uploadWindowMs: setting({
    env: 'IMAGEGATE_UPLOAD_WINDOW_MS',
    file: 'upload_window_ms',
    parse: integerSetting(60_000, 30 * 24 * 60 * 60 * 1000),
    default: 24 * 60 * 60 * 1000,
    description:
      "The window over which a token's uploads are counted (windows are aligned to the epoch, in UTC).",
  }),
  uploadMbPerToken: setting({
    env: 'IMAGEGATE_UPLOAD_MB_PER_TOKEN',
    file: 'upload_mb_per_token',
    parse: integerSetting(1, 100_000_000),
    default: 1024,
    description:
      "MiB of uploads one token may store per upload window (a token's own limit, `--upload-mb`, overrides it); past it an upload gets 429 Throttling.RateQuota with Retry-After.",
  }),
  uploadFilesPerToken: setting({
    env: 'IMAGEGATE_UPLOAD_FILES_PER_TOKEN',
    file: 'upload_files_per_token',
    parse: integerSetting(1, 100_000_000),
    default: 1000,
    description:
      "Files one token may upload per upload window (a token's own limit, `--upload-files`, overrides it); past it an upload gets 429 Throttling.RateQuota with Retry-After.",
  }),
  taskPollMs: setting({
    env: 'IMAGEGATE_TASK_POLL_MS',
    file: 'task_poll_ms',
    parse: integerSetting(10, 60_000),
    default: 1000,
    description:
      'How often a node with room looks for PENDING tasks submitted to other nodes (its own are claimed at once) and for tasks whose runner died.',
  }),
  taskLeaseMs: setting({
    env: 'IMAGEGATE_TASK_LEASE_MS',
    file: 'task_lease_ms',
    parse: integerSetting(1000, 3_600_000),
    default: 30_000,
    description:
      'How long a RUNNING task stays claimed by a node that stopped renewing it (died or stalled); then any node ends it FAILED, billing nothing. Runners renew every third of it.',
  }),
  ledgerFlushMs: setting({
    env: 'IMAGEGATE_LEDGER_FLUSH_MS',
    file: 'ledger_flush_ms',
    parse: integerSetting(10, 60_000),
    default: 1000,
    description: 'How often usage rows of unbilled requests are written to the ledger.',
  }),
  ledgerBatchSize: setting({
    env: 'IMAGEGATE_LEDGER_BATCH_SIZE',
    file: 'ledger_batch_size',
    parse: integerSetting(1, 10_000),
    default: 500,
    description: 'Rows per ledger write; a full batch is written without waiting for the interval.',
  }),
  channels: setting<unknown>({
    env: undefined,
    file: 'channels',
    // readChannels reads it, reporting every problem and resolving key variables.
    parse: (raw) => ({ ok: true, value: raw }),
    default: undefined,
    description:
      'Upstream channels: a list of {name, type, base_url, api_key_env, models, priority, weight, timeout_ms, ...}; see docs/channels.md. File only. Unset or empty: one local channel serves both models.',
  }),
  routingDeadlineMs: setting({
    env: 'IMAGEGATE_ROUTING_DEADLINE_MS',
    file: 'routing_deadline_ms',
    parse: integerSetting(1000, 3_600_000),
    default: 300_000,
    description:
      'Longest a request may spend in channels, all attempts and failovers included; each attempt is also bounded by its channel timeout_ms.',
  }),
  allowPrivateImageUrls: setting({
    env: 'IMAGEGATE_ALLOW_PRIVATE_IMAGE_URLS',
    file: 'allow_private_image_urls',
    parse: booleanSetting(),
    default: false,
    description:
      'Lets input image URLs point at loopback, private and link-local addresses (cloud metadata addresses stay refused). For local development and tests only.',
  }),
  imageConnectTimeoutMs: setting({
    env: 'IMAGEGATE_IMAGE_CONNECT_TIMEOUT_MS',
    file: 'image_connect_timeout_ms',
    parse: integerSetting(100, 60_000),
    default: 5000,
    description: 'Time allowed to connect to the host of an input image URL.',
  }),
  imageFetchTimeoutMs: setting({
    env: 'IMAGEGATE_IMAGE_FETCH_TIMEOUT_MS',
    file: 'image_fetch_timeout_ms',
    parse: integerSetting(1000, 600_000),
    default: 20_000,
    description: 'Time allowed for one input image URL in all: DNS, redirects and the whole body.',
  }),
} as const;

export type SettingName = keyof typeof SETTINGS;
