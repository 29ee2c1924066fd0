import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
/** Long enough for the slowest row (a 2 s upstream under 1,000 callers) to count as answered. */
const REQUEST_TIMEOUT_SECONDS = 30;

/** wrk on the PATH, or undefined. The bench has no other load generator. */
export function findWrk(): string | undefined {
  return (process.env.PATH ?? '')
    .split(path.delimiter)
    .map((directory) => path.join(directory, 'wrk'))
    .find((candidate) => existsSync(candidate));
}

/** One fixed-duration load: `connections` callers each sending the same POST back to back. */
export interface Load {
  url: string;
  body: string;
  headers: Record<string, string>;
  connections: number;
  seconds: number;
  /**
   * Each request carries an `X-Request-Id` of the caller's own, a random UUID, as a proxy in
   * front of the gateway (Envoy, an ingress) often sets one.
   */
  randomRequestIds?: boolean;
  /** Authorization headers the requests take in turn, replacing `headers`' own `authorization`. */
  authorizations?: readonly string[];
}

export interface LoadResult {
  requests: number;
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** Socket errors (connect, read, write, time-out) plus answers other than 2xx and 3xx. */
  errors: number;
}

export async function runWrk(wrk: string, load: Load): Promise<LoadResult> {
  const directory = await mkdtemp(path.join(tmpdir(), 'imagegate-proxy-wrk-'));
  const script = path.join(directory, 'post.lua');
  await writeFile(script, luaScript(load));
  try {
    const { stdout, stderr } = await run(
      wrk,
      [
        `--threads=${Math.min(2, load.connections)}`,
        `--connections=${load.connections}`,
        `--duration=${load.seconds}s`,
        `--timeout=${REQUEST_TIMEOUT_SECONDS}s`,
        '--latency',
        `--script=${script}`,
        load.url,
      ],
      { timeout: (load.seconds + REQUEST_TIMEOUT_SECONDS + 30) * 1000 },
    );
    // wrk runs on after an error in its script, sending requests the script did not describe.
    if (stderr.trim() !== '') throw new Error(`wrk: ${stderr.trim()}`);
    return parseWrkOutput(stdout);
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

/** Lua long brackets hold the JSON body and header values without any escaping. */
function luaScript(load: Load): string {
  const long = (text: string) => `[==[${text}]==]`;
  return [
    'wrk.method = "POST"',
    `wrk.body = ${long(load.body)}`,
    ...Object.entries(load.headers).map(
      // The spaces matter: `[[` would open a long string.
      ([name, value]) => `wrk.headers[ ${long(name)} ] = ${long(value)}`,
    ),
    ...perRequestHeaders(load),
    '',
  ].join('\n');
}

/**
 * A `request` function when requests differ: a random version 4 UUID as `X-Request-Id` (each wrk
 * thread seeds its own generator), or the next of several tokens.
 */
function perRequestHeaders(load: Load): string[] {
  const random = load.randomRequestIds === true;
  const tokens = load.authorizations ?? [];
  if (!random && tokens.length < 2) return [];
  return [
    `local tokens = { ${tokens.map((token) => `[==[${token}]==]`).join(', ')} }`,
    'local sent = 0',
    'local seeded = false',
    'function request()',
    '  if #tokens > 0 then',
    '    sent = sent + 1',
    '    wrk.headers["authorization"] = tokens[(sent % #tokens) + 1]',
    '  end',
    ...(random
      ? [
          '  if not seeded then math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16)); seeded = true end',
          '  local hex = function(digits) return string.format("%0" .. digits .. "x", math.random(0, 16 ^ digits - 1)) end',
          '  wrk.headers["X-Request-Id"] = hex(8) .. "-" .. hex(4) .. "-4" .. hex(3) .. "-" ..',
          '    string.format("%x", math.random(8, 11)) .. hex(3) .. "-" .. hex(6) .. hex(6)',
        ]
      : []),
    '  return wrk.format()',
    'end',
  ];
}

const TO_MS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Reads wrk's summary and the `--latency` distribution. */
export function parseWrkOutput(output: string): LoadResult {
  const number = (pattern: RegExp) => {
    const match = pattern.exec(output);
    if (match === null) throw new Error(`wrk output lacks ${pattern}:\n${output}`);
    return Number(match[1]);
  };
  const percentile = (label: string) => {
    const match = new RegExp(`^\\s+${label}%\\s+([\\d.]+)(us|ms|s|m|h)\\s*$`, 'm').exec(output);
    if (match === null) throw new Error(`wrk output lacks the ${label}% latency:\n${output}`);
    return Number(match[1]) * (TO_MS[match[2] as string] as number);
  };
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(
    output,
  );
  const refused = /Non-2xx or 3xx responses: (\d+)/.exec(output);
  return {
    requests: number(/(\d+) requests in /),
    requestsPerSecond: number(/Requests\/sec:\s+([\d.]+)/),
    p50Ms: percentile('50'),
    p99Ms: percentile('99'),
    errors:
      (socketErrors === null ? 0 : socketErrors.slice(1).reduce((sum, n) => sum + Number(n), 0)) +
      (refused === null ? 0 : Number(refused[1])),
  };
}
