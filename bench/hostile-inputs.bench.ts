import { setTimeout as sleep } from 'node:timers/promises';
import type { LoadedImage } from '../src/domain/loaded-image.js';
import type { EngineJob } from '../src/engine/engine.js';
import { LocalEngine } from '../src/engine/local/local-engine.js';
import { emptyRleBomb, longRunRleBomb } from '../test/engine/bmp-fixtures.js';
import { type BenchRow, medianMs } from './bench-row.js';
import { engineJob } from './engine-job.js';
import { outputOf } from '../src/engine/engine-run.js';

const BOMB_SIDE = 8000;
const LONG_RUN_BOMB_BYTES = 20_000_000;

function job(parameters: Record<string, unknown>, inputs: LoadedImage[] = []): EngineJob {
  return engineJob('a lighthouse at dusk', parameters, inputs);
}

function bmpInput(bytes: Buffer, index: number): LoadedImage {
  return {
    path: `input.messages[0].content[${index}].image`,
    format: 'bmp',
    width: BOMB_SIDE,
    height: BOMB_SIDE,
    bytes: () => bytes,
  };
}

/** Settles `work` and returns how long it took; a refusal (400 InvalidImage) counts as done. */
async function timed(work: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await work().catch(() => undefined);
  return performance.now() - start;
}

const MB = 1024 * 1024;

/**
 * The process's resident memory (worker threads included) while `work` ran: its highest rise
 * over the start, and how much of the rise is still held once `work` is done.
 */
async function rssGrowth(
  work: () => Promise<unknown>,
): Promise<{ peakMb: number; retainedMb: number }> {
  const before = process.memoryUsage.rss();
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, 5);
  try {
    await work().catch(() => undefined);
  } finally {
    clearInterval(sampler);
  }
  const after = process.memoryUsage.rss();
  return {
    peakMb: (Math.max(peak, after) - before) / MB,
    retainedMb: Math.max(0, after - before) / MB,
  };
}

/**
 * A 1K text-to-image request sent while `bomb` decodes (50 ms after it was sent): how long the
 * victim waits for its picture.
 */
async function victimLatencyMs(engine: LocalEngine, bomb: EngineJob): Promise<number> {
  const bombDone = outputOf(engine.generate(bomb)).catch(() => undefined);
  await sleep(50);
  const latency = await timed(() => outputOf(engine.generate(job({ size: '1K' }))));
  await bombDone;
  return latency;
}

/**
 * Hostile BMP inputs against the local engine with its default pool; each bomb on an engine of
 * its own, so one's memory does not blur the other's.
 */
export default async function bench(): Promise<BenchRow[]> {
  const bombs = [
    {
      name: '9 x 1 KB RLE8 BMPs declaring 8000x8000, one 2K request',
      job: job(
        { size: '2K' },
        Array.from({ length: 9 }, (_, index) => bmpInput(emptyRleBomb(BOMB_SIDE), index)),
      ),
    },
    {
      name: '20 MB RLE8 BMP of over-long runs, one 2K request',
      job: job({ size: '2K' }, [
        bmpInput(longRunRleBomb(LONG_RUN_BOMB_BYTES, BOMB_SIDE, BOMB_SIDE), 0),
      ]),
    },
  ];
  const rows: BenchRow[] = [];
  for (const bomb of bombs) {
    const engine = new LocalEngine();
    try {
      rows.push(...(await measure(engine, bomb.name, bomb.job)));
    } finally {
      await engine.close();
    }
  }
  return rows;
}

async function measure(engine: LocalEngine, name: string, bomb: EngineJob): Promise<BenchRow[]> {
  // Every thread started and its modules loaded, so that only the bomb's memory is measured.
  const small = bmpInput(emptyRleBomb(BOMB_SIDE / 16), 0);
  await outputOf(engine.generate(job({ size: '1K' }, [{ ...small, width: 500, height: 500 }])));
  const { peakMb, retainedMb } = await rssGrowth(() => outputOf(engine.generate(bomb)));
  return [
    {
      name: `${name}: peak RSS growth`,
      value: peakMb,
      unit: 'MB',
      note: 'first run, 5 ms samples',
    },
    {
      name: `${name}: RSS still held after it`,
      value: retainedMb,
      unit: 'MB',
      note: 'right after the answer',
    },
    {
      name: `${name}: time`,
      value: await medianMs(() => outputOf(engine.generate(bomb)).catch(() => undefined), 3, 0),
      unit: 'ms',
      note: 'median of 3, refusal or answer',
    },
    {
      name: `${name}: 1K text-to-image alone`,
      value: await medianMs(() => outputOf(engine.generate(job({ size: '1K' }))), 5),
      unit: 'ms',
      note: 'median of 5',
    },
    {
      name: `${name}: 1K text-to-image sent while it decodes`,
      value: await victimLatencyMs(engine, bomb),
      unit: 'ms',
      note: 'one run, sent 50 ms after the bomb',
    },
  ];
}
