// The gateway as a proxy, side by side with nginx: one DashScope channel at a fake upstream on
// loopback that answers at once, wrk as the callers, all of them sharing the machine's cores.
// The bench prints its own tables (its rows have more columns than the runner's) and hands the
// runner the headline figures.
//   npm run bench -- proxy            10 s per load row
//   npm run bench -- proxy --quick    2 s per load row, fewer sequential requests
//   PROXY_BENCH_SECONDS=N             seconds per load row, overriding either
//   npm run bench -- proxy --only=largest,crowd   only those parts (compare, crowd, largest,
//                                                 large-image)
//   npm run bench -- proxy --rows=PostgreSQL      only the comparison's and the crowd's rows whose
//                                                 names contain it (several: --rows=bare,imagegate)
import { spawnSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { Agent } from 'node:http';
import { availableParallelism, loadavg, totalmem } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { SYNC_PATH } from '../src/channels/dashscope/dashscope-protocol.js';
import { MODEL_A } from '../src/domain/models.js';
import type { BenchRow } from './bench-row.js';
import { arrivalSpread } from './proxy-arrivals.js';
import { Children } from './proxy-children.js';
import { GENERATION_BODY, post, sequentialLatency } from './proxy-client.js';
import {
  type FakeUpstream,
  BARE_BILLING_PROXY,
  BARE_FASTIFY_PROXY,
  BARE_NODE_PROXY,
  startReference,
  startFakeUpstream,
  untilNoneWaiting,
} from './proxy-fake-control.js';
import { ensureBuilt, type GatewaySetup, startGateway } from './proxy-gateway.js';
import { type RunningNginx, startNginx } from './proxy-nginx.js';
import { largestGreyPng } from './proxy-png.js';
import { openSharedBackend, QUOTA_TOKEN_LIMITS } from './proxy-postgres-redis.js';
import {
  cpuMs,
  cpuMsOfCommand,
  listenOverflows,
  loadAverageText,
  mainThreadCpuMs,
  peakRssBytes,
  rssBytes,
  sampleRss,
} from './proxy-proc.js';
import {
  type AloneRow,
  type CrowdResult,
  headlineRows,
  type LargeImageResult,
  type LargeResult,
  type LoadRow,
  printReport,
} from './proxy-report.js';
import { SETUP } from './proxy-setup-names.js';
import { machineComparison, targetsTable } from './proxy-targets.js';
import { findWrk, runWrk } from './proxy-wrk.js';

const QUICK = process.argv.includes('--quick');
const PARTS = ['compare', 'crowd', 'largest', 'large-image'] as const;
type Part = (typeof PARTS)[number];
const ONLY = onlyParts(process.argv);
const ROWS = (
  process.argv.find((argument) => argument.startsWith('--rows='))?.slice('--rows='.length) ?? ''
).split(',');
/** `--rows=a,b`: the rows whose names contain any of the texts. */
const rowChosen = (name: string): boolean => ROWS.some((text) => name.includes(text));
const LOAD_SECONDS = Number(process.env.PROXY_BENCH_SECONDS ?? (QUICK ? 2 : 10));
const WARMUP_SECONDS = QUICK ? 1 : 2;
const CONNECTIONS = 64;
const ALONE_REQUESTS = QUICK ? 50 : 200;
const SLOW_UPSTREAM_MS = 50;
const CROWD_CALLERS = 1000;
const CROWD_UPSTREAM_MS = 2000;
/** Enough for every caller of the crowd to be answered a few times. */
const CROWD_SECONDS = Math.max(LOAD_SECONDS, 6);
/** The crowd's rows: the gateway's two modes, and what plain proxies reach beside them. */
const CROWD_SETUPS: readonly string[] = [
  SETUP.direct,
  SETUP.nginx,
  SETUP.bareNode,
  SETUP.bareFastify,
  SETUP.bareBilling,
  SETUP.passThrough,
  SETUP.rehost,
];
/** How often the crowd's memory and the callers waiting at the upstream are read. */
const CROWD_SAMPLE_MS = 50;
const LARGE_IMAGE_COUNT = 9;
/** 20 MiB: the largest input image the gateway accepts. */
const LARGE_IMAGE_BYTES = 20 * 1024 * 1024;
const LARGE_IMAGE_WIDTH = 2600;
const LARGE_REPEATS = QUICK ? 1 : 3;
/** Target 2's large upstream image: 5 MB, re-hosted. */
const LARGE_UPSTREAM_IMAGE_BYTES = 5_000_000;
const LARGE_IMAGE_REPEATS = QUICK ? 2 : 5;

const JSON_HEADERS = { 'content-type': 'application/json' };

/** Where a gateway row sends its requests, and what. */
interface Route {
  path: string;
  body: string;
}
const DASHSCOPE_ROUTE: Route = { path: SYNC_PATH, body: GENERATION_BODY };
/** The same request through the OpenAI front door: same model, prompt and image count. */
const OPENAI_ROUTE: Route = {
  path: '/v1/images/generations',
  body: JSON.stringify({ model: MODEL_A, prompt: 'a lighthouse at dusk', n: 1 }),
};
const PASS_THROUGH: GatewaySetup = { passThroughUrls: true, logLevel: 'warn' };
/** A gateway serving many callers: requests of this many tokens meet in one group commit. */
const MANY_TOKENS = 16;
const DEFAULT: GatewaySetup = { passThroughUrls: false, logLevel: 'warn' };

/** Where requests go and whose CPU they cost. */
interface Target {
  url: string;
  body: string;
  headers: Record<string, string>;
  /** The process doing the proxying (the fake itself when called directly). */
  cpuPid: number;
  /** Callers send random request ids of their own (`Load.randomRequestIds`). */
  randomRequestIds?: boolean;
  /** Tokens the callers take turns with (`Load.authorizations`). */
  authorizations?: readonly string[];
  /** The gateway runs on PostgreSQL and Redis, whose CPU the row reports too. */
  onServices?: boolean;
  /** The gateway's SQLite write-ahead log, whose size the row reports. */
  sqliteLogFile?: string | undefined;
  close(): Promise<void>;
}

/** One setup of the comparison: how to bring it up, and whether one caller alone is timed. */
interface Setup {
  name: string;
  timedAlone: boolean;
  open(): Promise<Target>;
}

export default async function bench(): Promise<BenchRow[]> {
  const wrk = findWrk();
  if (wrk === undefined)
    process.stderr.write(
      'proxy bench: wrk not installed; the load rows need it (there is no other load generator)\n',
    );
  const started = new Date();
  const loadBefore = loadAverageText();
  const children = new Children();
  try {
    await ensureBuilt();
    const fake = await startFakeUpstream(children);
    const comparing = ONLY.has('compare');
    // The crowd measures the references too: what a plain proxy does with a thousand callers.
    const referencing = comparing || ONLY.has('crowd');
    const nginx = referencing ? await startNginx(children, fake.port) : undefined;
    const bareNode = referencing
      ? await startReference(children, BARE_NODE_PROXY, fake.url)
      : undefined;
    const bareFastify = referencing
      ? await startReference(children, BARE_FASTIFY_PROXY, fake.url)
      : undefined;
    const bareBilling = referencing
      ? await startReference(children, BARE_BILLING_PROXY, fake.url)
      : undefined;
    const shared = comparing ? await openSharedBackend() : undefined;
    try {
      const { loads, alone } = comparing
        ? await compare(
            wrk,
            setupsOf(children, fake, nginx, { bareNode, bareFastify, bareBilling }, shared?.env),
            fake,
          )
        : { loads: [], alone: [] };
      const crowdSetups = setupsOf(
        children,
        fake,
        nginx,
        { bareNode, bareFastify, bareBilling },
        undefined,
      ).filter(({ name }) => CROWD_SETUPS.includes(name) && rowChosen(name));
      const crowd = !ONLY.has('crowd')
        ? 'crowd: not run (--only)'
        : wrk === undefined
          ? 'crowd: not measured, wrk is not installed'
          : await crowdRuns(wrk, crowdSetups, fake);
      const large = ONLY.has('largest')
        ? await largestRequest(children, fake)
        : 'largest request: not run (--only)';
      const largeImage = ONLY.has('large-image')
        ? await largeImageRehost(children, fake)
        : 'large upstream image: not run (--only)';
      const report = {
        machine: `${availableParallelism()} cores, ${(totalmem() / 2 ** 30).toFixed(1)} GiB memory`,
        loadBefore,
        loadAfter: loadAverageText(),
        started,
        tools: toolsLine(wrk, nginx),
        settings: settingsLine(
          !comparing
            ? 'PostgreSQL + Redis rows: not run (--only)'
            : shared === undefined
              ? 'PostgreSQL + Redis rows skipped: not reachable'
              : undefined,
        ),
        loads,
        alone,
        crowd,
        large,
        largeImage,
      };
      printReport(report);
      console.log(`${targetsTable(report, MANY_TOKENS)}\n`);
      const machine = machineComparison(report.loads);
      if (machine !== undefined) console.log(`${machine}\n`);
      return headlineRows(report);
    } finally {
      await shared?.close();
      await nginx?.stop();
    }
  } finally {
    await children.stopAll();
  }
}

/** Each setup under the same load, with an upstream that answers at once and one that waits. */
async function compare(
  wrk: string | undefined,
  setups: readonly Setup[],
  fake: FakeUpstream,
): Promise<{ loads: LoadRow[]; alone: AloneRow[] }> {
  const loads: LoadRow[] = [];
  const alone: AloneRow[] = [];
  for (const upstreamDelayMs of [0, SLOW_UPSTREAM_MS]) {
    await fake.setDelay(upstreamDelayMs);
    for (const setup of setups.filter(({ name }) => rowChosen(name))) {
      process.stderr.write(`proxy bench: ${setup.name}, upstream delay ${upstreamDelayMs} ms\n`);
      const target = await setup.open();
      try {
        if (wrk !== undefined) await load(wrk, target, CONNECTIONS, WARMUP_SECONDS);
        if (upstreamDelayMs === 0 && setup.timedAlone)
          alone.push({ setup: setup.name, ...(await timeAlone(target)) });
        if (wrk !== undefined)
          loads.push(await measuredLoad(wrk, setup.name, upstreamDelayMs, target, fake));
      } finally {
        await target.close();
      }
    }
  }
  await fake.setDelay(0);
  return { loads, alone };
}

function setupsOf(
  children: Children,
  fake: FakeUpstream,
  nginx: RunningNginx | undefined,
  references: Record<
    'bareNode' | 'bareFastify' | 'bareBilling',
    { url: string; pid: number } | undefined
  >,
  sharedEnv: Record<string, string> | undefined,
): Setup[] {
  const gateway = (
    name: string,
    timedAlone: boolean,
    setup: GatewaySetup,
    route: Route = DASHSCOPE_ROUTE,
    randomRequestIds = false,
  ): Setup => ({
    name,
    timedAlone,
    open: async () => {
      const running = await startGateway(children, fake.url, setup);
      return {
        url: `${running.url}${route.path}`,
        body: route.body,
        headers: { ...JSON_HEADERS, authorization: running.authorization },
        cpuPid: running.pid,
        randomRequestIds,
        authorizations: running.authorizations,
        onServices: setup.env !== undefined,
        sqliteLogFile: running.sqliteLogFile,
        close: running.stop,
      };
    },
  });
  const fixed = (name: string, url: string, cpuPid: number): Setup => ({
    name,
    timedAlone: true,
    open: () =>
      Promise.resolve({
        url: `${url}${SYNC_PATH}`,
        body: GENERATION_BODY,
        headers: JSON_HEADERS,
        cpuPid,
        close: async () => {},
      }),
  });
  return [
    fixed(SETUP.direct, fake.url, fake.pid),
    ...(nginx === undefined ? [] : [fixed(SETUP.nginx, nginx.url, nginx.workerPid)]),
    ...(['bareNode', 'bareFastify', 'bareBilling'] as const).flatMap((name) => {
      const reference = references[name];
      return reference === undefined ? [] : [fixed(SETUP[name], reference.url, reference.pid)];
    }),
    gateway(SETUP.passThrough, true, PASS_THROUGH),
    gateway(SETUP.openAiRoute, false, PASS_THROUGH, OPENAI_ROUTE),
    gateway(SETUP.randomRequestIds, false, PASS_THROUGH, DASHSCOPE_ROUTE, true),
    gateway(SETUP.rehost, true, DEFAULT),
    gateway(SETUP.rehostLogInfo, false, { ...DEFAULT, logLevel: 'info' }),
    ...(sharedEnv === undefined
      ? []
      : [
          gateway(SETUP.rehostOnServices, false, {
            ...DEFAULT,
            env: sharedEnv,
            tokenLimits: QUOTA_TOKEN_LIMITS,
          }),
          gateway(SETUP.passThroughOnServices, false, {
            ...PASS_THROUGH,
            env: sharedEnv,
            tokenLimits: QUOTA_TOKEN_LIMITS,
          }),
          gateway(SETUP.manyTokensOnServices(MANY_TOKENS), false, {
            ...PASS_THROUGH,
            env: sharedEnv,
            tokenLimits: QUOTA_TOKEN_LIMITS,
            tokens: MANY_TOKENS,
          }),
        ]),
  ];
}

function load(wrk: string, target: Target, connections: number, seconds: number) {
  return runWrk(wrk, {
    url: target.url,
    body: target.body,
    headers: target.headers,
    connections,
    seconds,
    randomRequestIds: target.randomRequestIds === true,
    ...(target.authorizations === undefined ? {} : { authorizations: target.authorizations }),
  });
}

async function measuredLoad(
  wrk: string,
  setup: string,
  upstreamDelayMs: number,
  target: Target,
  fake: FakeUpstream,
): Promise<LoadRow> {
  const loadAverage = loadavg()[0] as number;
  const cpuBefore = cpuMs(target.cpuPid);
  const mainBefore = mainThreadCpuMs(target.cpuPid);
  const upstreamBefore = cpuMs(fake.pid);
  const servicesBefore = target.onServices === true ? servicesCpuMs() : undefined;
  const result = await load(wrk, target, CONNECTIONS, LOAD_SECONDS);
  const servicesAfter = target.onServices === true ? servicesCpuMs() : undefined;
  const perRequest = (ms: number) => (ms * 1000) / Math.max(1, result.requests);
  const cpuSpent = cpuMs(target.cpuPid) - cpuBefore;
  return {
    setup,
    upstreamDelayMs,
    loadAverage,
    result,
    cpuUsPerRequest: perRequest(cpuSpent),
    mainThreadShare: (mainThreadCpuMs(target.cpuPid) - mainBefore) / Math.max(cpuSpent, 1e-9),
    upstreamCpuUsPerRequest:
      target.cpuPid === fake.pid ? undefined : perRequest(cpuMs(fake.pid) - upstreamBefore),
    servicesCpuUsPerRequest:
      servicesBefore === undefined || servicesAfter === undefined
        ? undefined
        : {
            postgres: perRequest(servicesAfter.postgres - servicesBefore.postgres),
            redis: perRequest(servicesAfter.redis - servicesBefore.redis),
          },
    sqliteLogBytes: target.sqliteLogFile === undefined ? undefined : sizeOf(target.sqliteLogFile),
  };
}

/** A file's size; 0 when it does not exist (yet). */
function sizeOf(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

/** CPU used so far by the machine's PostgreSQL and Redis processes (other work on them too). */
function servicesCpuMs(): { postgres: number; redis: number } {
  return { postgres: cpuMsOfCommand('postgres'), redis: cpuMsOfCommand('redis-server') };
}

function timeAlone(target: Target) {
  return sequentialLatency(target.url, target.body, target.headers, ALONE_REQUESTS);
}

/** The crowd through each setup in turn, on a fresh process where the setup starts one. */
async function crowdRuns(
  wrk: string,
  setups: readonly Setup[],
  fake: FakeUpstream,
): Promise<CrowdResult[]> {
  const results: CrowdResult[] = [];
  for (const setup of setups) results.push(...(await crowdRun(wrk, setup, fake)));
  return results;
}

/**
 * A thousand callers at once, the upstream taking 2 s, twice through one setup: cold, on a process
 * that has only seen the 64 connections of the warm-up, so that its first wave also opens a
 * thousand connections to the upstream; then warm, with those connections kept alive (callers
 * connect anew either time). wrk ends a run by leaving a thousand callers mid-call; the gateway
 * drops their upstream calls and so closes those connections, and its undici pool opens new ones
 * at once, before the warm run starts: the connections the upstream accepts in each run tell.
 * Reported: the latency the callers see, how long the run's first thousand calls took to reach
 * the upstream (the setup's time to take in that many callers at once), and the memory of the
 * process answering them (the gateway, nginx's worker, the bare proxy; the fake itself when
 * direct) over its RSS before the cold run, read two ways. Held (cold run only): the most seen
 * while nearly every caller waited at the upstream and none had been answered yet, what requests
 * in flight keep. Peak: over the whole run, which adds the garbage of the waves answered so far
 * until a collection takes it.
 */
async function crowdRun(wrk: string, setup: Setup, fake: FakeUpstream): Promise<CrowdResult[]> {
  process.stderr.write(
    `proxy bench: crowd of ${CROWD_CALLERS} through ${setup.name}, upstream delay ${CROWD_UPSTREAM_MS} ms\n`,
  );
  const target = await setup.open();
  try {
    await load(wrk, target, CONNECTIONS, WARMUP_SECONDS);
    await fake.setDelay(CROWD_UPSTREAM_MS);
    await sleep(1000);
    const idleRssBytes = rssBytes(target.cpuPid);
    const results: CrowdResult[] = [];
    for (const run of ['cold', 'warm'] as const) {
      const loadAverage = loadavg()[0] as number;
      const before = await fake.counts();
      const overflowsBefore = listenOverflows();
      await fake.noteArrivals(CROWD_CALLERS);
      const watch = watchCrowd(target.cpuPid, fake, run === 'cold', before.answered);
      const cpuBefore = cpuMs(target.cpuPid);
      const mainBefore = mainThreadCpuMs(target.cpuPid);
      const result = await load(wrk, target, CROWD_CALLERS, CROWD_SECONDS);
      const cpuSpent = cpuMs(target.cpuPid) - cpuBefore;
      const mainSpent = mainThreadCpuMs(target.cpuPid) - mainBefore;
      const overflowsAfter = listenOverflows();
      const { heldRssBytes, peakRssBytes } = await watch.stop();
      const upstreamConnections = (await fake.counts()).connections - before.connections;
      const firstWave = arrivalSpread(await fake.arrivals(), CROWD_CALLERS);
      // wrk leaves the callers of its last wave waiting; the next run starts once they are done.
      await untilNoneWaiting(fake);
      results.push({
        setup: setup.name,
        run,
        callers: CROWD_CALLERS,
        upstreamDelayMs: CROWD_UPSTREAM_MS,
        seconds: CROWD_SECONDS,
        loadAverage,
        result,
        idleRssBytes,
        heldRssBytes,
        peakRssBytes,
        upstreamConnections,
        firstWave,
        cpuUsPerRequest: {
          mainThread: (mainSpent * 1000) / Math.max(result.requests, 1),
          otherThreads: ((cpuSpent - mainSpent) * 1000) / Math.max(result.requests, 1),
        },
        synsDropped:
          overflowsBefore === undefined || overflowsAfter === undefined
            ? undefined
            : overflowsAfter - overflowsBefore,
      });
    }
    return results;
  } finally {
    await fake.setDelay(0);
    await target.close();
  }
}

/**
 * Reads `pid`'s RSS and the callers waiting at the fake every CROWD_SAMPLE_MS until stopped. With
 * `readsHeld`, a reading counts as held while at least 95% of the callers wait and the fake has
 * answered none since `answeredBefore`. Only the cold run reads it: a warm run's RSS still holds
 * what the cold run left for the collector, which is not what its own requests keep.
 */
function watchCrowd(pid: number, fake: FakeUpstream, readsHeld: boolean, answeredBefore: number) {
  let heldBytes: number | undefined;
  let peakBytes = rssBytes(pid);
  let stopped = false;
  const reading = (async () => {
    while (!stopped) {
      const { waiting, answered } = await fake.counts();
      const rss = rssBytes(pid);
      peakBytes = Math.max(peakBytes, rss);
      if (readsHeld && waiting >= 0.95 * CROWD_CALLERS && answered === answeredBefore)
        heldBytes = Math.max(heldBytes ?? 0, rss);
      await sleep(CROWD_SAMPLE_MS);
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await reading;
      return { heldRssBytes: heldBytes, peakRssBytes: peakBytes };
    },
  };
}

/**
 * Nine 20 MiB PNGs as data URLs, the largest body the gateway accepts: first sent straight to the
 * fake upstream, then through a fresh default gateway, which validates every image and forwards
 * them as they came.
 */
async function largestRequest(children: Children, fake: FakeUpstream): Promise<LargeResult> {
  process.stderr.write('proxy bench: the largest legal request\n');
  const png = largestGreyPng(LARGE_IMAGE_WIDTH, LARGE_IMAGE_BYTES);
  const image = { image: `data:image/png;base64,${png.toString('base64')}` };
  const body = Buffer.from(
    JSON.stringify({
      model: MODEL_A,
      input: {
        messages: [
          {
            role: 'user',
            content: [
              ...Array.from({ length: LARGE_IMAGE_COUNT }, () => image),
              { text: 'one picture of all nine' },
            ],
          },
        ],
      },
      parameters: { n: 1 },
    }),
  );
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const gateway = await startGateway(children, fake.url, DEFAULT);
  try {
    const direct: number[] = [];
    for (let i = 0; i < LARGE_REPEATS; i++)
      direct.push((await post(agent, `${fake.url}${SYNC_PATH}`, body, JSON_HEADERS)).ms);

    const url = `${gateway.url}${SYNC_PATH}`;
    const headers = { ...JSON_HEADERS, authorization: gateway.authorization };
    for (let i = 0; i < 20; i++) await post(agent, url, GENERATION_BODY, headers);
    await sleep(1000);
    const loadAverage = loadavg()[0] as number;
    const idleRssBytes = rssBytes(gateway.pid);
    const cpuBefore = cpuMs(gateway.pid);
    const sampler = sampleRss(gateway.pid, 10);
    const answered: number[] = [];
    const forwarded: number[] = [];
    for (let i = 0; i < LARGE_REPEATS; i++) {
      const answer = await post(agent, url, body, headers);
      if (answer.status !== 200)
        throw new Error(`the largest legal request was answered ${answer.status}`);
      const upstream = await fake.lastBody();
      if (upstream.bytes < png.length * LARGE_IMAGE_COUNT)
        throw new Error(`the upstream got ${upstream.bytes} bytes, not the nine images`);
      answered.push(answer.ms);
      forwarded.push(upstream.receivedAt - answer.startedAt);
    }
    // Sampling every 10 ms can miss the top of a short peak; the kernel's high-water mark cannot.
    const peakRss = Math.max(sampler.stop(), peakRssBytes(gateway.pid));
    return {
      bodyBytes: body.length,
      imageBytes: png.length,
      repeats: LARGE_REPEATS,
      loadAverage,
      directMs: median(direct),
      gatewayMs: median(answered),
      gatewayForwardedMs: median(forwarded),
      gatewayCpuMsPerRequest: (cpuMs(gateway.pid) - cpuBefore) / LARGE_REPEATS,
      idleRssBytes,
      peakRssBytes: peakRss,
    };
  } finally {
    agent.destroy();
    await gateway.stop();
  }
}

/**
 * A 5 MB upstream image re-hosted by a fresh default gateway, one request at a time: the time,
 * the CPU and the peak memory over idle, against the image's size. Each stored copy is fetched
 * back whole, so the figure is of an image really stored.
 */
async function largeImageRehost(children: Children, fake: FakeUpstream): Promise<LargeImageResult> {
  process.stderr.write('proxy bench: a large upstream image re-hosted\n');
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const gateway = await startGateway(children, fake.url, DEFAULT);
  try {
    const url = `${gateway.url}${SYNC_PATH}`;
    const headers = { ...JSON_HEADERS, authorization: gateway.authorization };
    for (let i = 0; i < 20; i++) await post(agent, url, GENERATION_BODY, headers);
    await fake.setImageBytes(LARGE_UPSTREAM_IMAGE_BYTES);
    const imageBytes = (await fetch(`${fake.url}/image.png`).then((r) => r.arrayBuffer()))
      .byteLength;
    await sleep(1000);
    const loadAverage = loadavg()[0] as number;
    const idleRssBytes = rssBytes(gateway.pid);
    const cpuBefore = cpuMs(gateway.pid);
    const answered: number[] = [];
    const stored: string[] = [];
    const growths: number[] = [];
    let peakRss = idleRssBytes;
    for (let i = 0; i < LARGE_IMAGE_REPEATS; i++) {
      // Each request's own growth: its peak over the resident set just before it.
      const before = rssBytes(gateway.pid);
      const sampler = sampleRss(gateway.pid, 5);
      const started = performance.now();
      const answer = await fetch(url, { method: 'POST', headers, body: GENERATION_BODY });
      const body = await answer.text();
      const peak = sampler.stop();
      if (answer.status !== 200)
        throw new Error(`the large image's request was answered ${answer.status}: ${body}`);
      answered.push(performance.now() - started);
      growths.push(peak - before);
      peakRss = Math.max(peakRss, peak);
      stored.push(...imageUrlsOf(body));
    }
    const cpuAfter = cpuMs(gateway.pid);
    peakRss = Math.max(peakRss, peakRssBytes(gateway.pid));
    for (const image of stored) {
      const length = (await fetch(image).then((r) => r.arrayBuffer())).byteLength;
      if (length !== imageBytes)
        throw new Error(`a re-hosted copy has ${length} bytes, not the upstream's ${imageBytes}`);
    }
    if (stored.length !== LARGE_IMAGE_REPEATS)
      throw new Error(`${stored.length} images stored for ${LARGE_IMAGE_REPEATS} requests`);
    return {
      imageBytes,
      repeats: LARGE_IMAGE_REPEATS,
      loadAverage,
      gatewayMs: median(answered),
      gatewayCpuMsPerRequest: (cpuAfter - cpuBefore) / LARGE_IMAGE_REPEATS,
      idleRssBytes,
      peakRssBytes: peakRss,
      medianGrowthBytes: median(growths),
      largestGrowthBytes: Math.max(...growths),
    };
  } finally {
    await fake.setImageBytes(0);
    agent.destroy();
    await gateway.stop();
  }
}

/** The image URLs of a multimodal-generation answer. */
function imageUrlsOf(body: string): string[] {
  const answer = JSON.parse(body) as {
    output?: { choices?: { message?: { content?: { image?: string }[] } }[] };
  };
  return (answer.output?.choices ?? []).flatMap((choice) =>
    (choice.message?.content ?? []).flatMap((item) =>
      item.image === undefined ? [] : [item.image],
    ),
  );
}

/** `--only=largest,crowd` picks parts of the bench; without it, every part runs. */
function onlyParts(argv: readonly string[]): ReadonlySet<Part> {
  const option = argv.find((argument) => argument.startsWith('--only='));
  if (option === undefined) return new Set(PARTS);
  const names = option.slice('--only='.length).split(',');
  const parts = PARTS.filter((part) => names.includes(part));
  const unknown = names.filter((name) => !PARTS.some((part) => part === name));
  if (unknown.length > 0 || parts.length === 0)
    throw new Error(`--only takes a list of ${PARTS.join(', ')}; got ${option}`);
  return new Set(parts);
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

function toolsLine(wrk: string | undefined, nginx: RunningNginx | undefined): string {
  const firstLine = (command: string, args: string[]) => {
    const result = spawnSync(command, args, { encoding: 'utf8' });
    return `${result.stdout}${result.stderr}`.split('\n')[0]?.trim() ?? '';
  };
  return [
    `node ${process.version}`,
    wrk === undefined ? 'wrk: not installed' : firstLine(wrk, ['--version']),
    nginx === undefined ? 'nginx: not installed' : firstLine('/usr/sbin/nginx', ['-v']),
  ].join('; ');
}

/** `sharedNote`: why the PostgreSQL + Redis rows are missing, when they are. */
function settingsLine(sharedNote: string | undefined): string {
  return [
    'gateway: node dist/main.js with IMAGEGATE_LOG_LEVEL=warn unless the row says info; SQLite and',
    '  disk storage in a fresh data directory; one dashscope channel; a token without limits',
    '  (the PostgreSQL + Redis row: image quota, rpm and concurrency set, none ever reached);',
    '  every other setting at its default',
    `load: wrk, ${CONNECTIONS} connections, 2 threads, ${LOAD_SECONDS} s per row after ${WARMUP_SECONDS} s of warm-up, --timeout 30s`,
    `one request alone: median of ${ALONE_REQUESTS} sequential requests on one kept-alive connection, after 20 more`,
    'CPU: utime + stime from /proc/<pid>/stat over the measured run, divided by the requests answered;',
    '  for the PostgreSQL + Redis rows, also that of every postgres and redis-server process',
    "SQLite log: the size of the gateway's imagegate.db-wal once the measured run is over",
    ...(sharedNote === undefined ? [] : [sharedNote]),
  ].join('\n');
}
