// Instructions per request of the built gateway, and of the proxy bench's references (the bare
// Node.js and Fastify proxies, and the one that bills), counted by valgrind's callgrind: the CPU
// cost of one request alone, as a number that does not move with the machine's load. Timed CPU figures
// (the proxy bench) swing by a fifth between runs on a shared VM; this count repeats to within
// a few percent (the warm count: up to about 3% between runs of one build, as V8's optimisation
// decisions differ), so a change of several percent can be seen across commits, and a smaller
// one in alternated runs.
//   npm run bench -- instructions
//   INSTRUCTIONS_WARMUP=N INSTRUCTIONS_COUNTED=N   requests before counting, and counted
//   INSTRUCTIONS_ONLY=text[,text]                  only the rows whose names contain one of them
//   INSTRUCTIONS_KEEP=directory                    keep callgrind's files there (one per
//                                                  thread), for callgrind_annotate
// The quota-token setup (PostgreSQL and Redis, as the proxy bench's) runs when both are reachable.
// What it counts: user-space instructions between the first and last counted request, sent one
// after another on one kept-alive connection, on the main thread (the event loop, where requests
// queue) and on all threads (libuv's pool, V8's compiler and GC helpers too). Not counted: the
// kernel (system calls, the disk, the network stack). The default warm-up of 3,000 requests
// lets V8 optimise the hot path first, so the count is that of a warm gateway, as in production;
// after 300 (the default until the fifth round, INSTRUCTIONS_WARMUP=300 for figures comparable
// with those) much of the path still ran in V8's baseline tier and its compiler threads were busy,
// which made the counts some 40% higher. Figures are comparable only with the same warm-up.
import { execFile, spawnSync } from 'node:child_process';
import { cp, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { SYNC_PATH } from '../src/channels/dashscope/dashscope-protocol.js';
import { MODEL_A } from '../src/domain/models.js';
import type { BenchRow } from './bench-row.js';
import { Children } from './proxy-children.js';
import { post } from './proxy-client.js';
import {
  BARE_BILLING_PROXY,
  BARE_FASTIFY_PROXY,
  BARE_NODE_PROXY,
  type ReferenceProxy,
  startFakeUpstream,
  startReference,
} from './proxy-fake-control.js';
import { ensureBuilt, type GatewaySetup, startGateway } from './proxy-gateway.js';
import { openSharedBackend, QUOTA_TOKEN_LIMITS } from './proxy-postgres-redis.js';

const run = promisify(execFile);
const WARMUP = Number(process.env.INSTRUCTIONS_WARMUP ?? 3000);
const COUNTED = Number(process.env.INSTRUCTIONS_COUNTED ?? 300);

/** Where a setup sends its requests, and what. */
interface Route {
  path: string;
  body: string;
}
const DASHSCOPE_ROUTE: Route = {
  path: SYNC_PATH,
  body: JSON.stringify({
    model: MODEL_A,
    input: { messages: [{ role: 'user', content: [{ text: 'a lighthouse at dusk' }] }] },
    parameters: { n: 1 },
  }),
};
/** The same request through the OpenAI front door: same model, prompt and image count. */
const OPENAI_ROUTE: Route = {
  path: '/v1/images/generations',
  body: JSON.stringify({ model: MODEL_A, prompt: 'a lighthouse at dusk', n: 1 }),
};

const ONLY = (process.env.INSTRUCTIONS_ONLY ?? '').split(',');
const chosen = (name: string): boolean => ONLY.some((text) => name.includes(text));
const KEEP = process.env.INSTRUCTIONS_KEEP;
const SHARED_SETUP_NAME = 'pass_through_urls, quota token on PostgreSQL + Redis';

/**
 * The floors the gateway is read against: what a Node.js proxy does per request at the least, on
 * node:http, on Fastify, and on Fastify committing a bill per answer (the proxy bench's references).
 */
const REFERENCES: { name: string; proxy: ReferenceProxy }[] = [
  { name: 'reference: bare Node.js proxy', proxy: BARE_NODE_PROXY },
  { name: 'reference: bare Fastify proxy', proxy: BARE_FASTIFY_PROXY },
  { name: 'reference: bare Fastify proxy + a bill', proxy: BARE_BILLING_PROXY },
];

/** What a row counts: a process on the callgrind wrapper, and how to call it. */
interface Subject {
  url: string;
  pid: number;
  headers: Record<string, string>;
  stop(): Promise<void>;
}

function setups(sharedEnv: Record<string, string> | undefined) {
  const passThrough: GatewaySetup = { passThroughUrls: true, logLevel: 'warn' };
  const all: { name: string; setup: GatewaySetup; route?: Route }[] = [
    { name: 'pass_through_urls', setup: passThrough },
    { name: 'pass_through_urls, OpenAI route', setup: passThrough, route: OPENAI_ROUTE },
    { name: 'default (re-hosts a small PNG)', setup: { passThroughUrls: false, logLevel: 'warn' } },
  ];
  if (sharedEnv !== undefined)
    all.push({
      name: SHARED_SETUP_NAME,
      setup: {
        passThroughUrls: true,
        logLevel: 'warn',
        env: sharedEnv,
        tokenLimits: QUOTA_TOKEN_LIMITS,
      },
    });
  return all.filter(({ name }) => chosen(name));
}

export default async function bench(): Promise<BenchRow[]> {
  if (spawnSync('valgrind', ['--version']).status !== 0) {
    process.stderr.write('instructions bench: valgrind not installed, nothing measured\n');
    return [];
  }
  await ensureBuilt();
  const children = new Children();
  const directory = await mkdtemp(path.join(tmpdir(), 'imagegate-instructions-'));
  const rows: Counted[] = [];
  const shared = chosen(SHARED_SETUP_NAME) ? await openSharedBackend() : undefined;
  try {
    const fake = await startFakeUpstream(children);
    const subjects: {
      name: string;
      route: Route;
      start: (wrapper: string[]) => Promise<Subject>;
    }[] = [
      ...setups(shared?.env).map(({ name, setup, route = DASHSCOPE_ROUTE }) => ({
        name,
        route,
        start: async (wrapper: string[]) => {
          const gateway = await startGateway(children, fake.url, { ...setup, wrapper });
          return { ...gateway, headers: { authorization: gateway.authorization } };
        },
      })),
      ...REFERENCES.filter(({ name }) => chosen(name)).map(({ name, proxy }) => ({
        name,
        route: DASHSCOPE_ROUTE,
        start: async (wrapper: string[]) => ({
          ...(await startReference(children, proxy, fake.url, {
            wrapper,
            env: { HOST: '127.0.0.1' },
          })),
          headers: {},
        }),
      })),
    ];
    for (const { name, route, start } of subjects) {
      process.stderr.write(`instructions bench: ${name} (${WARMUP} + ${COUNTED} requests)\n`);
      const outFile = path.join(directory, `${rows.length}.callgrind`);
      const subject = await start([
        'valgrind',
        // Its banner would go to the bench's output with the references' own.
        '--quiet',
        '--tool=callgrind',
        '--instr-atstart=no',
        '--separate-threads=yes',
        `--callgrind-out-file=${outFile}`,
      ]);
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      try {
        const send = async (count: number) => {
          for (let i = 0; i < count; i++) {
            const answer = await post(agent, `${subject.url}${route.path}`, route.body, {
              'content-type': 'application/json',
              ...subject.headers,
            });
            if (answer.status !== 200) throw new Error(`${name}: answered ${answer.status}`);
          }
        };
        await send(WARMUP);
        await instrumentation('on', subject.pid);
        await send(COUNTED);
        await instrumentation('off', subject.pid);
      } finally {
        agent.destroy();
        // callgrind writes its counts as the process exits.
        await subject.stop();
      }
      rows.push({ name, ...(await instructionsPerRequest(directory, outFile)) });
    }
  } finally {
    await children.stopAll();
    await shared?.close();
    if (KEEP !== undefined) await cp(directory, KEEP, { recursive: true });
    await rm(directory, { recursive: true, force: true });
  }
  printTable(rows);
  return rows.flatMap((row) => [
    {
      name: `instructions per request alone, main thread, ${row.name}`,
      value: row.mainThread / 1000,
      unit: 'k instr' as const,
      note: `callgrind, ${COUNTED} requests after ${WARMUP}`,
    },
    {
      name: `instructions per request alone, all threads, ${row.name}`,
      value: row.allThreads / 1000,
      unit: 'k instr' as const,
      note: `callgrind, ${COUNTED} requests after ${WARMUP}`,
    },
  ]);
}

interface Counted {
  name: string;
  mainThread: number;
  allThreads: number;
}

/** callgrind writes one file per thread, `<file>-01` being the main thread's. */
async function instructionsPerRequest(
  directory: string,
  outFile: string,
): Promise<{ mainThread: number; allThreads: number }> {
  const prefix = `${path.basename(outFile)}-`;
  const files = (await readdir(directory)).filter((file) => file.startsWith(prefix)).sort();
  const totals = await Promise.all(
    files.map(async (file) =>
      totalInstructions(await readFile(path.join(directory, file), 'utf8')),
    ),
  );
  if (totals.length === 0) throw new Error('callgrind wrote no counts');
  return {
    mainThread: (totals[0] as number) / COUNTED,
    allThreads: totals.reduce((sum, total) => sum + total, 0) / COUNTED,
  };
}

/**
 * Switches callgrind's counting in a running process. vgdb finds the process by a file named
 * after the USER and HOST variables of both sides, and every process counted here runs with
 * HOST=127.0.0.1 (the gateway's listening address): callgrind_control must see the same.
 */
async function instrumentation(state: 'on' | 'off', pid: number): Promise<void> {
  const { stdout } = await run('callgrind_control', [`--instr=${state}`, String(pid)], {
    env: { ...process.env, HOST: '127.0.0.1' },
  });
  if (!stdout.includes('OK')) throw new Error(`callgrind_control --instr=${state}: ${stdout}`);
}

function totalInstructions(callgrindOutput: string): number {
  const match = /^totals: (\d+)/m.exec(callgrindOutput);
  if (match === null) throw new Error('callgrind wrote no totals');
  return Number(match[1]);
}

function printTable(rows: Counted[]): void {
  const count = (value: number) => Math.round(value).toLocaleString('en-US').padStart(13);
  const title = 'one request at a time';
  const width = Math.max(title.length, ...rows.map((row) => row.name.length));
  console.log(`\n| ${title.padEnd(width)} | instructions per request: main thread | all threads |`);
  console.log(`|${'-'.repeat(width + 2)}|${'-'.repeat(39)}|${'-'.repeat(15)}|`);
  for (const row of rows)
    console.log(
      `| ${row.name.padEnd(width)} | ${count(row.mainThread).padStart(37)} | ${count(row.allThreads)} |`,
    );
  const passThrough = rows.find((row) => row.name === 'pass_through_urls');
  const rehost = rows.find((row) => row.name.startsWith('default'));
  if (passThrough !== undefined && rehost !== undefined)
    console.log(
      `\nre-hosting against pass-through (user space only): main thread ${(rehost.mainThread / passThrough.mainThread).toFixed(2)}x, all threads ${(rehost.allThreads / passThrough.allThreads).toFixed(2)}x\n`,
    );
  for (const reference of rows.filter((row) => row.name.startsWith('reference: ')))
    if (passThrough !== undefined)
      console.log(
        `pass-through against the ${reference.name.slice('reference: '.length)}: main thread ${(passThrough.mainThread / reference.mainThread).toFixed(2)}x, all threads ${(passThrough.allThreads / reference.allThreads).toFixed(2)}x`,
      );
  const openai = rows.find((row) => row.name.endsWith('OpenAI route'));
  if (passThrough !== undefined && openai !== undefined)
    console.log(
      `OpenAI route against the DashScope route: main thread ${(openai.mainThread / passThrough.mainThread).toFixed(2)}x, all threads ${(openai.allThreads / passThrough.allThreads).toFixed(2)}x\n`,
    );
}
