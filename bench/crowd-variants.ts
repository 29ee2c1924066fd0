// The proxy bench's crowd (1,000 callers at once, a 2 s upstream, cold then warm) through a few
// setups in alternation, round after round: for comparing a change, or node's options, against
// the bare Node.js proxy with less noise than one bench run gives. Each round starts every setup
// afresh. Prints each run's p50 / p99 and the main thread's CPU per request, then the medians
// and each setup's p99 over the bare Node.js proxy's of the same round.
//   npx tsx bench/crowd-variants.ts ROUNDS SETUP...
// SETUP: node, fastify, billing (the references), pass-through or re-hosting (the gateway), the
// gateway's optionally with options for node after a colon:
//   npx tsx bench/crowd-variants.ts 3 node pass-through "pass-through:--max-semi-space-size=64"
import { setTimeout as sleep } from 'node:timers/promises';
import { SYNC_PATH } from '../src/channels/dashscope/dashscope-protocol.js';
import { Children } from './proxy-children.js';
import {
  BARE_BILLING_PROXY,
  BARE_FASTIFY_PROXY,
  BARE_NODE_PROXY,
  type FakeUpstream,
  type ReferenceProxy,
  startFakeUpstream,
  startReference,
  untilNoneWaiting,
} from './proxy-fake-control.js';
import { ensureBuilt, startGateway } from './proxy-gateway.js';
import { mainThreadCpuMs } from './proxy-proc.js';
import { findWrk, runWrk } from './proxy-wrk.js';
import { GENERATION_BODY } from './proxy-client.js';

const CALLERS = 1000;
const UPSTREAM_MS = 2000;
const SECONDS = 6;
const REFERENCES: Record<string, ReferenceProxy> = {
  node: BARE_NODE_PROXY,
  fastify: BARE_FASTIFY_PROXY,
  billing: BARE_BILLING_PROXY,
};
const GATEWAY_MODES: Record<string, boolean> = { 'pass-through': true, 're-hosting': false };

interface Target {
  url: string;
  headers: Record<string, string>;
  pid: number;
  stop(): Promise<void>;
}

interface Run {
  p50Ms: number;
  p99Ms: number;
  mainThreadUsPerRequest: number;
}

const [roundsText, ...setups] = process.argv.slice(2);
const rounds = Number(roundsText);
const unknown = setups.filter((setup) => {
  const { name } = parsed(setup);
  return !(name in REFERENCES || name in GATEWAY_MODES);
});
if (!Number.isInteger(rounds) || rounds < 1 || setups.length === 0 || unknown.length > 0) {
  process.stderr.write(
    `usage: crowd-variants.ts ROUNDS SETUP... (node, fastify, billing, pass-through[:node options], re-hosting[:node options])${unknown.length > 0 ? `; unknown: ${unknown.join(', ')}` : ''}\n`,
  );
  process.exit(2);
}
const wrk = findWrk();
if (wrk === undefined) {
  process.stderr.write('crowd-variants: wrk is not installed\n');
  process.exit(2);
}

/** `pass-through:--flag --flag2`: the setup's name, and node's options for a gateway. */
function parsed(setup: string): { name: string; nodeOptions: string[] } {
  const [name = '', options = ''] = setup.split(/:(.*)/s);
  return { name, nodeOptions: options.split(' ').filter((option) => option !== '') };
}

async function open(children: Children, fake: FakeUpstream, setup: string): Promise<Target> {
  const { name, nodeOptions } = parsed(setup);
  const reference = REFERENCES[name];
  if (reference !== undefined) {
    const running = await startReference(children, reference, fake.url);
    return { url: running.url, headers: {}, pid: running.pid, stop: running.stop };
  }
  const gateway = await startGateway(children, fake.url, {
    passThroughUrls: GATEWAY_MODES[name] as boolean,
    logLevel: 'warn',
    nodeOptions,
  });
  return {
    url: gateway.url,
    headers: { authorization: gateway.authorization },
    pid: gateway.pid,
    stop: gateway.stop,
  };
}

/** A warm-up as the bench's, then the crowd cold and warm, each left to finish before the next. */
async function crowds(fake: FakeUpstream, target: Target): Promise<[Run, Run]> {
  const load = (connections: number, seconds: number) =>
    runWrk(wrk as string, {
      url: `${target.url}${SYNC_PATH}`,
      body: GENERATION_BODY,
      headers: { 'content-type': 'application/json', ...target.headers },
      connections,
      seconds,
    });
  await load(64, 2);
  await fake.setDelay(UPSTREAM_MS);
  try {
    await sleep(1000);
    const runs: Run[] = [];
    for (let run = 0; run < 2; run++) {
      const cpuBefore = mainThreadCpuMs(target.pid);
      const result = await load(CALLERS, SECONDS);
      runs.push({
        p50Ms: result.p50Ms,
        p99Ms: result.p99Ms,
        mainThreadUsPerRequest:
          ((mainThreadCpuMs(target.pid) - cpuBefore) * 1000) / Math.max(result.requests, 1),
      });
      await untilNoneWaiting(fake);
    }
    return runs as [Run, Run];
  } finally {
    await fake.setDelay(0);
  }
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
};
const shown = (run: Run) =>
  `${run.p50Ms} / ${run.p99Ms} ms, ${run.mainThreadUsPerRequest.toFixed(0)} µs`;

await ensureBuilt();
const children = new Children();
const results = new Map<string, [Run, Run][]>(setups.map((setup) => [setup, []]));
try {
  const fake = await startFakeUpstream(children);
  for (let round = 1; round <= rounds; round++) {
    for (const setup of setups) {
      const target = await open(children, fake, setup);
      try {
        const [cold, warm] = await crowds(fake, target);
        results.get(setup)?.push([cold, warm]);
        console.log(`round ${round}, ${setup}: cold ${shown(cold)}; warm ${shown(warm)}`);
      } finally {
        await target.stop();
      }
    }
  }
} finally {
  await children.stopAll();
}

console.log(
  '\nmedians, p50 / p99 ms and main-thread µs per request; p99 over the bare Node.js proxy of the same round',
);
const node = results.get('node');
for (const [setup, runs] of results) {
  const line = (index: 0 | 1) => {
    const of = (pick: (run: Run) => number) => median(runs.map((pair) => pick(pair[index])));
    const ratio =
      node === undefined || setup === 'node'
        ? ''
        : `, p99 ${median(runs.map((pair, round) => pair[index].p99Ms / (node[round] as [Run, Run])[index].p99Ms)).toFixed(3)}`;
    return `${of((run) => run.p50Ms)} / ${of((run) => run.p99Ms)} ms, ${of((run) => run.mainThreadUsPerRequest).toFixed(0)} µs${ratio}`;
  };
  console.log(`${setup}: cold ${line(0)}; warm ${line(1)}`);
}
