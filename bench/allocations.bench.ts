// What one request makes inside the gateway: the promises, ticks, timers and immediates it
// creates, and the bytes it allocates, collected or not. A probe loaded into a real gateway
// process (bench/allocation-probe.mjs) counts them while this bench sends requests. Every promise
// is a turn of the event loop's queue, and the collector's work follows the garbage; these counts
// show a change that the timed CPU figures, which move by a fifth between runs, cannot
// (docs/performance.md, "Allocations per request").
//   npm run bench -- allocations
//   ALLOCATIONS_ONLY=text   only the setups whose names contain it
import { readFile, mkdtemp, rm } from 'node:fs/promises';
import { Agent } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { SYNC_PATH } from '../src/channels/dashscope/dashscope-protocol.js';
import type { BenchRow } from './bench-row.js';
import { Children } from './proxy-children.js';
import { GENERATION_BODY, post } from './proxy-client.js';
import { startFakeUpstream } from './proxy-fake-control.js';
import {
  ensureBuilt,
  type GatewaySetup,
  type RunningGateway,
  startGateway,
} from './proxy-gateway.js';

const PROBE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'allocation-probe.mjs');
/** Enough for V8 to have optimised the request path, as in the instructions bench. */
const WARMUP = 3000;
const COUNTED = 2000;
/** As the proxy bench's loads: settlements then share their groups. */
const CONCURRENT = 64;
const PROBE_WAIT_MS = 10_000;
/**
 * How long a window stays open after its last answer: what the gateway does once an answer is
 * sent (its onResponse hooks, the connection's timers) still counts for the window's requests.
 */
const SETTLE_MS = 100;
const ONLY = process.env.ALLOCATIONS_ONLY ?? '';

/** The windows the probe counts, in order: what, and how many requests at once. */
const WINDOWS = [
  { kind: 'async', concurrency: 1 },
  { kind: 'async', concurrency: CONCURRENT },
  { kind: 'heap', concurrency: CONCURRENT },
] as const;

interface ProbeLine {
  window: number;
  kind: 'async' | 'heap';
  opened?: boolean;
  counts?: Record<string, number>;
  bytes?: number;
  error?: string;
}

interface Counted {
  name: string;
  alone: Record<string, number>;
  together: Record<string, number>;
  bytes: number;
}

const SETUPS: { name: string; setup: GatewaySetup }[] = [
  { name: 'pass_through_urls', setup: { passThroughUrls: true, logLevel: 'warn' } },
  { name: 'default (re-hosts a small PNG)', setup: { passThroughUrls: false, logLevel: 'warn' } },
];

export default async function bench(): Promise<BenchRow[]> {
  await ensureBuilt();
  const children = new Children();
  const directory = await mkdtemp(path.join(tmpdir(), 'imagegate-allocations-'));
  const counted: Counted[] = [];
  try {
    const fake = await startFakeUpstream(children);
    for (const { name, setup } of SETUPS.filter((entry) => entry.name.includes(ONLY))) {
      process.stderr.write(`allocations bench: ${name} (${WARMUP} + 3 x ${COUNTED} requests)\n`);
      const out = path.join(directory, `${counted.length}.jsonl`);
      const gateway = await startGateway(children, fake.url, {
        ...setup,
        nodeOptions: ['--import', PROBE],
        env: {
          ALLOCATION_PROBE_WINDOWS: WINDOWS.map((window) => window.kind).join(','),
          ALLOCATION_PROBE_OUT: out,
        },
      });
      try {
        counted.push({ name, ...(await countWindows(gateway, out)) });
      } finally {
        await gateway.stop();
      }
    }
  } finally {
    await children.stopAll();
    await rm(directory, { recursive: true, force: true });
  }
  printTable(counted);
  return counted.flatMap((row) => [
    {
      name: `promises per request alone, ${row.name}`,
      value: perRequest(row.alone, 'PROMISE'),
      unit: 'per request' as const,
      note: `async_hooks, ${COUNTED} requests after ${WARMUP}`,
    },
    {
      name: `promises per request, ${CONCURRENT} at once, ${row.name}`,
      value: perRequest(row.together, 'PROMISE'),
      unit: 'per request' as const,
      note: `async_hooks, ${COUNTED} requests after ${WARMUP}`,
    },
    {
      name: `bytes allocated per request, ${CONCURRENT} at once, ${row.name}`,
      value: row.bytes / COUNTED / 1000,
      unit: 'KB' as const,
      note: `heap sampling with collected objects, ${COUNTED} requests`,
    },
  ]);
}

async function countWindows(gateway: RunningGateway, out: string): Promise<Omit<Counted, 'name'>> {
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENT });
  try {
    const url = `${gateway.url}${SYNC_PATH}`;
    const headers = { 'content-type': 'application/json', authorization: gateway.authorization };
    const send = async (count: number, concurrency: number) => {
      let started = 0;
      const caller = async () => {
        while (started < count) {
          started += 1;
          const answer = await post(agent, url, GENERATION_BODY, headers);
          if (answer.status !== 200) throw new Error(`the gateway answered ${answer.status}`);
        }
      };
      await Promise.all(Array.from({ length: concurrency }, caller));
    };
    await send(WARMUP, CONCURRENT);
    const results: ProbeLine[] = [];
    for (const [index, window] of WINDOWS.entries()) {
      process.kill(gateway.pid, 'SIGUSR2');
      await probeLine(out, index, true);
      await send(COUNTED, window.concurrency);
      await sleep(SETTLE_MS);
      process.kill(gateway.pid, 'SIGUSR2');
      results.push(await probeLine(out, index, false));
    }
    const [alone, together, heap] = results;
    if (heap?.bytes === undefined) throw new Error(`the probe counted no bytes: ${heap?.error}`);
    return { alone: alone?.counts ?? {}, together: together?.counts ?? {}, bytes: heap.bytes };
  } finally {
    agent.destroy();
  }
}

/** Waits for the probe's line saying that window `index` opened, or its figures. */
async function probeLine(out: string, index: number, opened: boolean): Promise<ProbeLine> {
  const until = Date.now() + PROBE_WAIT_MS;
  while (Date.now() < until) {
    const lines = await readFile(out, 'utf8').catch(() => '');
    const found = lines
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as ProbeLine)
      .find((line) => line.window === index && (line.opened === true) === opened);
    if (found !== undefined) return found;
    await sleep(20);
  }
  throw new Error(`the allocation probe did not ${opened ? 'open' : 'close'} window ${index}`);
}

function perRequest(counts: Record<string, number>, type: string): number {
  return (counts[type] ?? 0) / COUNTED;
}

function printTable(rows: Counted[]): void {
  const header = [
    'gateway, per request',
    'promises alone',
    `promises, ${CONCURRENT} at once`,
    'ticks',
    'timers',
    'immediates',
    'KB allocated',
  ];
  const table = rows.map((row) => [
    row.name,
    perRequest(row.alone, 'PROMISE').toFixed(1),
    perRequest(row.together, 'PROMISE').toFixed(1),
    perRequest(row.together, 'TickObject').toFixed(1),
    perRequest(row.together, 'Timeout').toFixed(1),
    perRequest(row.together, 'Immediate').toFixed(1),
    (row.bytes / COUNTED / 1000).toFixed(1),
  ]);
  const widths = header.map((title, column) =>
    Math.max(title.length, ...table.map((row) => (row[column] as string).length)),
  );
  const line = (cells: string[]) =>
    `| ${cells.map((cell, column) => cell.padEnd(widths[column] as number)).join(' | ')} |`;
  console.log(`\n${line(header)}`);
  console.log(`|${widths.map((width) => '-'.repeat(width + 2)).join('|')}|`);
  for (const row of table) console.log(line(row));
  console.log(
    `(ticks, timers and immediates with ${CONCURRENT} at once; bytes sampled every 4 KiB, collected or not)\n`,
  );
}
