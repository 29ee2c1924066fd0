// A bad day against a real gateway process (`node --import tsx src/main.ts`) on its defaults:
// huge uploads, a full budget, trickling sockets, a shutdown under load.
//   BAD_DAY_GATEWAY_DIR=<checkout>  measure another checkout's gateway (default: this one)
//   BAD_DAY_ONLY=memory,sockets     run only these of: memory, shed, victim, sockets, drain
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import {
  type BodyDroppingDashScope,
  startBodyDroppingDashScope,
} from '../test/helpers/body-dropping-dashscope.js';
import { type ListeningProcess, startListeningProcess } from '../test/helpers/listening-process.js';
import { generationHead, rawExchange } from '../test/helpers/raw-http.js';
import { GENERATION_URL } from '../test/helpers/requests.js';
import type { BenchRow } from './bench-row.js';
import {
  type Answer,
  bodyWithImages,
  burstOf,
  errorCodeOf,
  load,
  MB,
  memoryOf,
  postGeneration,
  SMALL_BODY,
  tally,
} from './big-bodies.js';

const GATEWAY_DIR = path.resolve(process.env.BAD_DAY_GATEWAY_DIR ?? '.');

/** A gateway process of GATEWAY_DIR with a data dir and a token of its own. */
interface BenchGateway {
  url: string;
  port: number;
  pid: number;
  authorization: string;
  process: ListeningProcess;
  stop(): Promise<void>;
}

async function startGateway(
  upstream: BodyDroppingDashScope,
  settings: Record<string, string> = {},
): Promise<BenchGateway> {
  const dataDir = await mkdtemp(path.join(tmpdir(), 'imagegate-bad-day-'));
  const configFile = path.join(dataDir, 'gateway.yaml');
  await writeFile(
    configFile,
    [
      'channels:',
      '  - name: upstream',
      '    type: dashscope',
      `    base_url: ${upstream.url}`,
      '    api_key_env: BENCH_UPSTREAM_KEY',
    ].join('\n'),
  );
  const env = {
    IMAGEGATE_DATA_DIR: dataDir,
    IMAGEGATE_SECRET: randomBytes(32).toString('base64url'),
    IMAGEGATE_CONFIG: configFile,
    BENCH_UPSTREAM_KEY: upstream.apiKey,
    // Nobody reads the log here: a line per request would only add work to both processes.
    IMAGEGATE_LOG_LEVEL: 'warn',
    ...settings,
  };
  // The token comes from the measured checkout's own CLI, which also creates its database.
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--import', 'tsx', 'src/cli/entry.ts', 'token', 'create', '--name', 'bench'],
    { cwd: GATEWAY_DIR, env: { ...process.env, ...env } },
  );
  const gateway = await startListeningProcess(
    process.execPath,
    ['--import', 'tsx', 'src/main.ts'],
    env,
    { cwd: GATEWAY_DIR },
  );
  return {
    url: gateway.url,
    port: Number(new URL(gateway.url).port),
    pid: gateway.child.pid as number,
    authorization: `Bearer ${stdout.trim()}`,
    process: gateway,
    stop: async () => {
      if (gateway.child.exitCode === null && gateway.child.signalCode === null) {
        gateway.child.kill('SIGKILL');
        await gateway.ended;
      }
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

function percentile(values: readonly number[], fraction: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(fraction * sorted.length) - 1)] ?? Number.NaN;
}

async function memoryPeak(
  upstream: BodyDroppingDashScope,
  requests: number,
  images: number,
): Promise<BenchRow[]> {
  const body = await bodyWithImages(images);
  const name = `memory: ${requests} x ${(body.length / 1e6).toFixed(0)} MB bodies (${images} images each)`;
  upstream.delayMs = 1000;
  const gateway = await startGateway(upstream);
  try {
    const warmUp = await postGeneration(gateway, SMALL_BODY);
    if (warmUp.status !== 200) throw new Error(`warm-up answered ${warmUp.status}`);
    await sleep(1000);
    const before = (await memoryOf(gateway.pid)).rss;
    const startLoad = load();
    const { answers, seconds, peak } = await burstOf(gateway, requests, body);
    await sleep(3000);
    const after = (await memoryOf(gateway.pid)).rss;
    return [
      { name: `${name}: RSS before`, value: before, unit: 'MB', note: startLoad },
      {
        name: `${name}: RSS peak`,
        value: peak,
        unit: 'MB',
        note: `${tally(answers)} in ${seconds.toFixed(1)} s; ${load()}`,
      },
      { name: `${name}: RSS 3 s after`, value: after, unit: 'MB' },
    ];
  } finally {
    await gateway.stop();
  }
}

/** Two declared 256 MiB bodies that never come fill the default 512 MiB budget. */
function fillBodyBudget(gateway: BenchGateway): Socket[] {
  return [0, 1].map(() => {
    const socket = connect(gateway.port, '127.0.0.1', () =>
      socket.write(generationHead(GENERATION_URL, gateway.authorization, 256 * MB)),
    );
    socket.on('error', () => undefined);
    return socket;
  });
}

async function shedLatency(upstream: BodyDroppingDashScope): Promise<BenchRow[]> {
  const probes = 200;
  const gateway = await startGateway(upstream);
  const holders = fillBodyBudget(gateway);
  try {
    await sleep(500);
    const startLoad = load();
    const times: number[] = [];
    const statuses: Answer[] = [];
    for (let i = 0; i < probes; i++) {
      const started = performance.now();
      const answer = await rawExchange(
        gateway.port,
        generationHead(GENERATION_URL, gateway.authorization, SMALL_BODY.length),
        { body: SMALL_BODY },
      );
      // Until the server has answered and closed the connection.
      const ms = performance.now() - started;
      times.push(ms);
      statuses.push({ status: answer.status, code: errorCodeOf(answer.body), ms });
    }
    const name = 'shed: small request while the body budget is full, connect to 503 and close';
    return [
      {
        name: `${name}, p50`,
        value: percentile(times, 0.5),
        unit: 'ms',
        note: `${tally(statuses)}; ${startLoad}`,
      },
      { name: `${name}, p99`, value: percentile(times, 0.99), unit: 'ms', note: `of ${probes}` },
    ];
  } finally {
    for (const socket of holders) socket.destroy();
    await gateway.stop();
  }
}

async function victimLatency(upstream: BodyDroppingDashScope): Promise<BenchRow[]> {
  const hammers = 24;
  const victims = 40;
  upstream.delayMs = 0;
  const big = await bodyWithImages(1);
  const gateway = await startGateway(upstream);
  try {
    const sequentially = async (count: number) => {
      const answers: Answer[] = [];
      for (let i = 0; i < count; i++) answers.push(await postGeneration(gateway, SMALL_BODY));
      return answers;
    };
    await sequentially(20);
    const alone = await sequentially(50);
    const startLoad = load();
    let hammering = true;
    const hammered: Answer[] = [];
    const loops = Array.from({ length: hammers }, async () => {
      while (hammering) hammered.push(await postGeneration(gateway, big));
    });
    await sleep(2000);
    const meanwhile = await sequentially(victims);
    hammering = false;
    await Promise.all(loops);
    const ok = meanwhile.filter((answer) => answer.status === 200).map((answer) => answer.ms);
    const name = 'victim: small text-to-image request';
    return [
      {
        name: `${name}, alone, p50`,
        value: percentile(
          alone.map((answer) => answer.ms),
          0.5,
        ),
        unit: 'ms',
        note: `${tally(alone)}; upstream answers at once`,
      },
      {
        name: `${name}, while ${hammers} clients upload ${(big.length / 1e6).toFixed(0)} MB bodies, p50`,
        value: percentile(ok, 0.5),
        unit: 'ms',
        note: `victims ${tally(meanwhile)}; ${startLoad}`,
      },
      {
        name: `${name}, while ${hammers} clients upload ${(big.length / 1e6).toFixed(0)} MB bodies, max`,
        value: Math.max(...ok),
        unit: 'ms',
        note: `uploads ${tally(hammered)}; ${load()}`,
      },
    ];
  } finally {
    await gateway.stop();
  }
}

/** A connection that sends a request's head and one byte of its body, then nothing. */
interface Trickle {
  sentAt: number;
  closedAt: number | undefined;
  answer: string;
  socket: Socket;
}

function trickle(gateway: BenchGateway): Promise<Trickle> {
  return new Promise((resolve) => {
    const socket = connect(gateway.port, '127.0.0.1');
    const state: Trickle = { sentAt: 0, closedAt: undefined, answer: '', socket };
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      state.answer += chunk.toString('latin1');
    });
    socket.on('close', () => {
      state.closedAt = performance.now();
    });
    socket.on('connect', () => {
      socket.write(generationHead(GENERATION_URL, gateway.authorization, 1000));
      socket.write('{');
      state.sentAt = performance.now();
      resolve(state);
    });
  });
}

async function tricklingSockets(upstream: BodyDroppingDashScope): Promise<BenchRow[]> {
  const connections = 2000;
  const windowMs = 20_000;
  const gateway = await startGateway(upstream, { IMAGEGATE_REQUEST_TIMEOUT_MS: '5000' });
  try {
    const startLoad = load();
    let probing = true;
    const health: number[] = [];
    const unhealthy: string[] = [];
    const prober = (async () => {
      while (probing) {
        const answer = await rawExchange(
          gateway.port,
          'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n',
          { giveUpAfterMs: 5000 },
        ).catch((error: unknown) => ({ status: String(error), ms: Number.NaN }));
        if (answer.status === 200) health.push(answer.ms);
        else unhealthy.push(String(answer.status));
        await sleep(250);
      }
    })();
    const trickles: Trickle[] = [];
    // In batches, so that the listen backlog never drops a connection attempt.
    for (let opened = 0; opened < connections; opened += 100)
      trickles.push(...(await Promise.all(Array.from({ length: 100 }, () => trickle(gateway)))));
    const allOpen = performance.now();
    while (
      trickles.some((one) => one.closedAt === undefined) &&
      performance.now() - allOpen < windowMs
    )
      await sleep(100);
    probing = false;
    await prober;
    const closed = trickles.filter((one) => one.closedAt !== undefined);
    const statusOf = (one: Trickle) => /^HTTP\/1\.1 (\d+)/.exec(one.answer)?.[1] ?? 'no answer';
    const answers = tally(
      trickles.map((one) => ({
        status: one.closedAt === undefined ? 'still open' : statusOf(one),
      })),
    );
    for (const one of trickles) one.socket.destroy();
    const timedOut = closed
      .filter((one) => statusOf(one) === '408')
      .map((one) => (one.closedAt as number) - one.sentAt);
    const name = `sockets: ${connections} trickling connections, IMAGEGATE_REQUEST_TIMEOUT_MS=5000`;
    const outcome = `after ${windowMs / 1000} s: ${answers}`;
    const healthRow: BenchRow = {
      name: `${name}: /healthz meanwhile, max`,
      value: Math.max(...health),
      unit: 'ms',
      note: `${health.length} probes answered 200, ${unhealthy.length} did not${unhealthy.length === 0 ? '' : ` (${[...new Set(unhealthy)].join(', ')})`}; ${load()}`,
    };
    if (timedOut.length === 0)
      return [
        {
          name: `${name}: none closed for the time-out, window`,
          value: windowMs,
          unit: 'ms',
          note: `${outcome}; ${startLoad}`,
        },
        healthRow,
      ];
    return [
      {
        name: `${name}: byte sent to 408 and close, p50`,
        value: percentile(timedOut, 0.5),
        unit: 'ms',
        note: `${outcome}; ${startLoad}`,
      },
      {
        name: `${name}: byte sent to 408 and close, max`,
        value: Math.max(...timedOut),
        unit: 'ms',
        note: `opening all took ${(allOpen - (trickles[0]?.sentAt ?? allOpen)).toFixed(0)} ms`,
      },
      healthRow,
    ];
  } finally {
    await gateway.stop();
  }
}

async function drainTime(upstream: BodyDroppingDashScope): Promise<BenchRow[]> {
  const inFlight = 60;
  upstream.delayMs = 1000;
  const gateway = await startGateway(upstream);
  try {
    await postGeneration(gateway, SMALL_BODY);
    const received = upstream.received;
    const startLoad = load();
    const answers = Array.from({ length: inFlight }, () => postGeneration(gateway, SMALL_BODY));
    const waitUntil = performance.now() + 5000;
    while (upstream.received < received + inFlight && performance.now() < waitUntil)
      await sleep(10);
    const atUpstream = upstream.received - received;
    const signalled = performance.now();
    gateway.process.child.kill('SIGTERM');
    const { code } = await gateway.process.ended;
    const exitMs = performance.now() - signalled;
    return [
      {
        name: `drain: SIGTERM with ${inFlight} requests in flight (upstream 1 s), time to exit`,
        value: exitMs,
        unit: 'ms',
        note: `exit code ${code}; ${atUpstream} at the upstream when signalled; answers ${tally(await Promise.all(answers))}; ${startLoad}`,
      },
    ];
  } finally {
    await gateway.stop();
  }
}

const SCENARIOS: Record<string, (upstream: BodyDroppingDashScope) => Promise<BenchRow[]>> = {
  memory: async (upstream) => [
    ...(await memoryPeak(upstream, 16, 9)),
    ...(await memoryPeak(upstream, 50, 1)),
  ],
  shed: shedLatency,
  victim: victimLatency,
  sockets: tricklingSockets,
  drain: drainTime,
};

export default async function bench(): Promise<BenchRow[]> {
  const chosen = process.env.BAD_DAY_ONLY?.split(',') ?? Object.keys(SCENARIOS);
  const upstream = await startBodyDroppingDashScope();
  const rows: BenchRow[] = [];
  try {
    for (const scenario of chosen) {
      const run = SCENARIOS[scenario];
      if (run === undefined) throw new Error(`BAD_DAY_ONLY: no scenario "${scenario}"`);
      process.stderr.write(`  bad day: ${scenario} (gateway of ${GATEWAY_DIR})\n`);
      rows.push(...(await run(upstream)));
    }
  } finally {
    await upstream.close();
  }
  return rows;
}
