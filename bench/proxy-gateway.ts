import { execFile } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { type Children, hasExited } from './proxy-children.js';

const run = promisify(execFile);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const START_TIMEOUT_MS = 30_000;
/** Under valgrind the gateway starts some fifty times slower. */
const WRAPPED_START_TIMEOUT_MS = 300_000;
const KEY_VARIABLE = 'BENCH_DASHSCOPE_KEY';

export type LogLevel = 'warn' | 'info';

/** How one gateway under test differs from the defaults. */
export interface GatewaySetup {
  passThroughUrls: boolean;
  logLevel: LogLevel;
  /** Further settings, e.g. a PostgreSQL URL and Redis. */
  env?: Record<string, string>;
  /** Limit options of `token create`; none: a token without limits. */
  tokenLimits?: readonly string[];
  /** How many tokens (each with `tokenLimits`) the callers take turns with; 1 when absent. */
  tokens?: number;
  /** A command the gateway runs under (e.g. valgrind and its options); it starts slower then. */
  wrapper?: readonly string[];
  /** Options of node itself, before the gateway's script (e.g. `--import` of a probe). */
  nodeOptions?: readonly string[];
}

export interface RunningGateway {
  url: string;
  pid: number;
  /** The first token's Authorization header. */
  authorization: string;
  /** Every token's, `setup.tokens` of them. */
  authorizations: string[];
  /** SQLite's write-ahead log, when the gateway runs on SQLite (no database URL in `setup.env`). */
  sqliteLogFile: string | undefined;
  stop(): Promise<void>;
}

/** `npm start` builds first; so does the bench, when dist/ is missing or older than src/. */
export async function ensureBuilt(): Promise<void> {
  const built = await newestMtime(path.join(ROOT, 'dist'));
  if (built >= (await newestMtime(path.join(ROOT, 'src')))) return;
  process.stderr.write('proxy bench: building dist/ (npm run build)...\n');
  await run('npm', ['run', 'build', '--silent'], { cwd: ROOT });
}

async function newestMtime(directory: string): Promise<number> {
  let entries;
  try {
    entries = await readdir(directory, { recursive: true, withFileTypes: true });
  } catch {
    return 0;
  }
  const times = await Promise.all(
    entries
      .filter((entry) => entry.isFile())
      .map(async (entry) => (await stat(path.join(entry.parentPath, entry.name))).mtimeMs),
  );
  return Math.max(0, ...times);
}

/**
 * Starts `node dist/main.js` as `npm start` runs it, on a fresh data directory (SQLite unless
 * `setup.env` names a database), with one DashScope channel at `upstreamUrl` and every other
 * setting at its default. A token is issued first with the CLI, on the same settings. Its logs go
 * to a file, so that reading them costs the bench nothing while it measures.
 */
export async function startGateway(
  children: Children,
  upstreamUrl: string,
  setup: GatewaySetup,
): Promise<RunningGateway> {
  const directory = await mkdtemp(path.join(tmpdir(), 'imagegate-proxy-bench-'));
  const config = path.join(directory, 'gateway.yaml');
  await writeFile(
    config,
    [
      'channels:',
      '  - name: bench-dashscope',
      '    type: dashscope',
      `    base_url: ${upstreamUrl}`,
      `    api_key_env: ${KEY_VARIABLE}`,
      ...(setup.passThroughUrls ? ['    pass_through_urls: true'] : []),
      '',
    ].join('\n'),
  );
  const dataDirectory = path.join(directory, 'data');
  const env = {
    ...inheritedEnv(),
    HOST: '127.0.0.1',
    PORT: '0',
    IMAGEGATE_DATA_DIR: dataDirectory,
    IMAGEGATE_LOG_LEVEL: setup.logLevel,
    IMAGEGATE_CONFIG: config,
    [KEY_VARIABLE]: 'sk-bench',
    ...setup.env,
  };
  const authorizations: string[] = [];
  for (let index = 0; index < (setup.tokens ?? 1); index++) {
    const { stdout: token } = await run(
      process.execPath,
      [
        path.join(ROOT, 'dist/cli/entry.js'),
        'token',
        'create',
        '--name',
        `bench-${index}`,
        ...(setup.tokenLimits ?? []),
      ],
      { cwd: ROOT, env },
    );
    authorizations.push(`Bearer ${token.trim()}`);
  }
  const logFile = path.join(directory, 'gateway.log');
  const log = openSync(logFile, 'w');
  const command = [
    ...(setup.wrapper ?? []),
    process.execPath,
    ...(setup.nodeOptions ?? []),
    path.join(ROOT, 'dist/main.js'),
  ];
  const child = children.spawn(command[0] as string, command.slice(1), {
    cwd: ROOT,
    env,
    stdio: ['ignore', log, log],
  });
  closeSync(log);
  const stop = async () => {
    await children.stop(child);
    await rm(directory, { recursive: true, force: true });
  };
  try {
    const url = await listeningUrl(
      logFile,
      () => hasExited(child),
      setup.wrapper === undefined ? START_TIMEOUT_MS : WRAPPED_START_TIMEOUT_MS,
    );
    return {
      url,
      pid: child.pid as number,
      authorization: authorizations[0] as string,
      authorizations,
      sqliteLogFile:
        setup.env?.IMAGEGATE_DATABASE_URL === undefined
          ? path.join(dataDirectory, 'imagegate.db-wal')
          : undefined,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The bench's environment without any gateway setting, so that the gateway runs on defaults. */
function inheritedEnv(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(process.env).filter(
      (entry): entry is [string, string] =>
        entry[1] !== undefined &&
        !entry[0].startsWith('IMAGEGATE_') &&
        entry[0] !== 'HOST' &&
        entry[0] !== 'PORT',
    ),
  );
}

async function listeningUrl(
  logFile: string,
  exited: () => boolean,
  timeoutMs: number,
): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const logs = await readFile(logFile, 'utf8');
    const match = /listening on (http:\/\/\S+)/.exec(logs);
    if (match !== null) return match[1] as string;
    if (exited()) throw new Error(`the gateway exited before listening:\n${logs}`);
    if (Date.now() > deadline)
      throw new Error(`the gateway did not listen within ${timeoutMs} ms:\n${logs}`);
    await sleep(50);
  }
}
