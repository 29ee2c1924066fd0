// The memory a burst of large bodies leaves behind: a gateway process started as `npm start`
// starts it (node dist/main.js, every setting at its default) takes a burst of concurrent
// generation requests with bodies just under IMAGEGATE_MAX_BODY_BYTES, most of which the in-flight
// body budget sheds, and its resident memory is read before, at the peak, and for 30 s after.
// MB in its rows are MiB (2^20 bytes); the body size is in decimal MB.
//   npm run bench -- memory
//   MEMORY_BENCH_BURST=N    requests in the burst (default 16)
//   MEMORY_BENCH_IMAGES=N   20 MiB images in each body (default 9, model A's most)
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { startBodyDroppingDashScope } from '../test/helpers/body-dropping-dashscope.js';
import type { BenchRow } from './bench-row.js';
import {
  bodyWithImages,
  burstOf,
  load,
  MB,
  memoryOf,
  postGeneration,
  SMALL_BODY,
  tally,
} from './big-bodies.js';
import { Children } from './proxy-children.js';
import { ensureBuilt, startGateway } from './proxy-gateway.js';

const BURST = Number(process.env.MEMORY_BENCH_BURST ?? 16);
/** Model A's most input images, each as large as the image limit allows (20 MiB)... */
const IMAGES_PER_BODY = Number(process.env.MEMORY_BENCH_IMAGES ?? 9);
/** ...a noise PNG of 2640 x 2640 x 3 bytes is 19.95 MiB: nine in base64 make a 251 MB body. */
const NOISE_SIDE = 2640;
const AFTER_S = 30;

/** Where a process's resident memory is, from /proc/<pid>/smaps_rollup, in MiB. */
async function residentParts(pid: number): Promise<{ anonymous: number; file: number }> {
  const rollup = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kilobytes = (field: string) =>
    Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(rollup)?.[1] ?? Number.NaN);
  const anonymous = (kilobytes('Anonymous') * 1024) / MB;
  return { anonymous, file: (kilobytes('Rss') * 1024) / MB - anonymous };
}

/** V8's heap and the memory outside it that V8 knows of (Buffers), from the gateway's /metrics. */
async function v8Parts(url: string): Promise<{ heap: number; external: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const gauge = (name: string) =>
    Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN) / MB;
  return {
    heap: gauge('nodejs_heap_size_total_bytes'),
    external: gauge('nodejs_external_memory_bytes'),
  };
}

const signedMb = (value: number) => `${value < 0 ? '' : '+'}${value.toFixed(0)} MB`;

async function breakdown(pid: number, url: string): Promise<string> {
  const [{ anonymous, file }, { heap, external }] = await Promise.all([
    residentParts(pid),
    v8Parts(url),
  ]);
  const mb = (value: number) => `${value.toFixed(0)} MB`;
  return `anonymous ${mb(anonymous)}, file-backed ${mb(file)}; V8 heap ${mb(heap)}, external ${mb(external)}`;
}

export default async function bench(): Promise<BenchRow[]> {
  await ensureBuilt();
  const children = new Children();
  const upstream = await startBodyDroppingDashScope();
  upstream.delayMs = 1000;
  try {
    const gateway = await startGateway(children, upstream.url, {
      passThroughUrls: false,
      logLevel: 'warn',
      // Only to read V8's figures; it changes nothing else.
      env: { IMAGEGATE_METRICS: 'public' },
    });
    const body = await bodyWithImages(IMAGES_PER_BODY, NOISE_SIDE);
    const warmUp = await postGeneration(gateway, SMALL_BODY);
    if (warmUp.status !== 200) throw new Error(`warm-up answered ${warmUp.status}`);
    await sleep(2000);
    const idle = (await memoryOf(gateway.pid)).rss;
    const idleParts = await breakdown(gateway.pid, gateway.url);

    const { answers, seconds, peak } = await burstOf(gateway, BURST, body);

    const trail: string[] = [];
    let after = peak;
    for (let second = 5; second <= AFTER_S; second += 5) {
      await sleep(5000);
      after = (await memoryOf(gateway.pid)).rss;
      trail.push(`${second} s: ${after.toFixed(0)}`);
    }
    const afterParts = await breakdown(gateway.pid, gateway.url);
    const name = `memory: ${BURST} x ${(body.length / 1e6).toFixed(0)} MB bodies at once`;
    return [
      { name: `${name}: RSS idle`, value: idle, unit: 'MB', note: `${idleParts}; ${load()}` },
      {
        name: `${name}: RSS peak`,
        value: peak,
        unit: 'MB',
        note: `${signedMb(peak - idle)}; ${tally(answers)} in ${seconds.toFixed(1)} s; ${load()}`,
      },
      {
        name: `${name}: RSS ${AFTER_S} s after`,
        value: after,
        unit: 'MB',
        note: `${signedMb(after - idle)}; ${afterParts}`,
      },
      {
        name: `${name}: RSS over idle ${AFTER_S} s after`,
        value: after - idle,
        unit: 'MB',
        note: `RSS after ${trail.join(', ')}`,
      },
    ];
  } finally {
    await children.stopAll();
    await upstream.close();
  }
}
