import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { type Children, firstMatch } from './proxy-children.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SCRIPT = path.join(ROOT, 'bench', 'proxy-fake-upstream.ts');
const BARE_NODE_SCRIPT = path.join(ROOT, 'bench', 'proxy-bare-node.ts');
const BARE_FASTIFY_SCRIPT = path.join(ROOT, 'bench', 'proxy-bare-fastify.ts');
const BARE_BILLING_SCRIPT = path.join(ROOT, 'bench', 'proxy-bare-billing.ts');

/**
 * What the fake has seen: calls waiting out the delay now, calls answered, and connections
 * accepted (the bench's own requests to the fake's control routes among them).
 */
export interface UpstreamCounts {
  waiting: number;
  answered: number;
  connections: number;
}

/** The fake upstream process, seen from the bench. */
export interface FakeUpstream {
  url: string;
  port: number;
  pid: number;
  /** How long each generation call waits before it is answered. */
  setDelay(ms: number): Promise<void>;
  /** When the last generation body had arrived whole (epoch ms), and its size. */
  lastBody(): Promise<{ bytes: number; receivedAt: number }>;
  /** The image served for re-hosting: a PNG of about `bytes` bytes; 0 for the small one. */
  setImageBytes(bytes: number): Promise<void>;
  /** What the fake has seen since it started. */
  counts(): Promise<UpstreamCounts>;
  /** Starts noting when each of the next `count` generation calls arrives. */
  noteArrivals(count: number): Promise<void>;
  /** How long after the first of the calls noted each arrived, in ms, in order of arrival. */
  arrivals(): Promise<number[]>;
}

export async function startFakeUpstream(children: Children): Promise<FakeUpstream> {
  const child = children.spawn(process.execPath, ['--import', 'tsx', SCRIPT], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const match = await firstMatch(child, /\{"port":(\d+)\}/, 'the fake upstream');
  const port = Number(match[1]);
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    port,
    pid: child.pid as number,
    setDelay: async (ms) => {
      const response = await fetch(`${url}/__delay?ms=${ms}`, { method: 'POST' });
      if (response.status !== 204)
        throw new Error(`fake upstream: delay not set (${response.status})`);
    },
    setImageBytes: async (bytes) => {
      const response = await fetch(`${url}/__image?bytes=${bytes}`, { method: 'POST' });
      if (response.status !== 204)
        throw new Error(`fake upstream: image not set (${response.status})`);
    },
    counts: async () => (await (await fetch(`${url}/__counts`)).json()) as UpstreamCounts,
    noteArrivals: async (count) => {
      const response = await fetch(`${url}/__arrivals?keep=${count}`, { method: 'POST' });
      if (response.status !== 204)
        throw new Error(`fake upstream: arrivals not noted (${response.status})`);
    },
    arrivals: async () =>
      ((await (await fetch(`${url}/__arrivals`)).json()) as { afterFirstMs: number[] })
        .afterFirstMs,
    lastBody: async () =>
      (await (await fetch(`${url}/__last`)).json()) as { bytes: number; receivedAt: number },
  };
}

/** How often untilNoneWaiting asks the fake. */
const WAITING_POLL_MS = 50;

/** Waits until the fake holds no call, then a second for the proxy to finish with them. */
export async function untilNoneWaiting(fake: FakeUpstream): Promise<void> {
  while ((await fake.counts()).waiting > 0) await sleep(WAITING_POLL_MS);
  await sleep(1000);
}

/** A reference proxy once it listens. */
export interface RunningReference {
  url: string;
  pid: number;
  /** SIGTERM, then SIGKILL after a grace time; resolves once it has exited. */
  stop(): Promise<void>;
}

/** How a reference proxy is started: a command it runs under (e.g. valgrind), more variables. */
export interface ReferenceOptions {
  wrapper?: readonly string[];
  env?: Record<string, string>;
}

/** A reference proxy: its script (run with the upstream's URL as argument) and its name. */
export interface ReferenceProxy {
  script: string;
  name: string;
}

/** The bare Node.js proxy (bench/proxy-bare-node.ts). */
export const BARE_NODE_PROXY: ReferenceProxy = {
  script: BARE_NODE_SCRIPT,
  name: 'the bare Node.js proxy',
};
/** The same on Fastify (bench/proxy-bare-fastify.ts). */
export const BARE_FASTIFY_PROXY: ReferenceProxy = {
  script: BARE_FASTIFY_SCRIPT,
  name: 'the bare Fastify proxy',
};
/** The bare Fastify proxy that commits a bill before each answer (bench/proxy-bare-billing.ts). */
export const BARE_BILLING_PROXY: ReferenceProxy = {
  script: BARE_BILLING_SCRIPT,
  name: 'the bare billing proxy',
};

/** Under a wrapper such as valgrind, a reference takes minutes rather than seconds to start. */
const WRAPPED_START_TIMEOUT_MS = 300_000;

/** `proxy` in front of `upstreamUrl`, once it listens. */
export async function startReference(
  children: Children,
  { script, name }: ReferenceProxy,
  upstreamUrl: string,
  { wrapper = [], env = {} }: ReferenceOptions = {},
): Promise<RunningReference> {
  const command = [...wrapper, process.execPath, '--import', 'tsx', script, upstreamUrl];
  const child = children.spawn(command[0] as string, command.slice(1), {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const match = await firstMatch(
    child,
    /\{"port":(\d+)\}/,
    name,
    wrapper.length === 0 ? undefined : WRAPPED_START_TIMEOUT_MS,
  );
  return {
    url: `http://127.0.0.1:${match[1]}`,
    pid: child.pid as number,
    stop: () => children.stop(child),
  };
}
