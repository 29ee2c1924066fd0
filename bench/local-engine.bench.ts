import sharp from 'sharp';
import type { LoadedImage } from '../src/domain/loaded-image.js';
import type { EngineJob } from '../src/engine/engine.js';
import { LocalEngine } from '../src/engine/local/local-engine.js';
import { type BenchRow, medianMs } from './bench-row.js';
import { engineJob } from './engine-job.js';
import { outputOf } from '../src/engine/engine-run.js';

const PROMPT = 'a red fox in the snow, watercolour';

function job(parameters: Record<string, unknown>, inputs: LoadedImage[] = []): EngineJob {
  return engineJob(PROMPT, parameters, inputs);
}

/** A 1600x1200 photo-like JPEG (smooth colour fields), as a phone might send. */
async function photo(index: number): Promise<LoadedImage> {
  const width = 1600;
  const height = 1200;
  const data = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const offset = (y * width + x) * 3;
      data[offset] = 128 + 120 * Math.sin(x / 90 + index);
      data[offset + 1] = 128 + 120 * Math.cos(y / 70 - index);
      data[offset + 2] = (x ^ y) & 0xff;
    }
  }
  const bytes = await sharp(data, { raw: { width, height, channels: 3 } })
    .jpeg({ quality: 90 })
    .toBuffer();
  return {
    path: `input.messages[0].content[${index}].image`,
    format: 'jpeg',
    width,
    height,
    bytes: () => bytes,
  };
}

const PALETTE = [
  { hex: '#112233', ratio: '40.00%' },
  { hex: '#E4A11B', ratio: '35.50%' },
  { hex: '#8FC1E3', ratio: '24.50%' },
];

/** Per-image time as a caller sees it: the hop to a worker thread and back included. */
async function perImage(engine: LocalEngine, task: EngineJob, iterations: number): Promise<number> {
  let images = 1;
  const median = await medianMs(async () => {
    images = (await outputOf(engine.generate(task))).images.length;
  }, iterations);
  return median / images;
}

/** The longest the event loop went without running a 1 ms timer while `work` ran. */
async function longestPauseMs(work: () => Promise<unknown>): Promise<number> {
  let last = performance.now();
  let longest = 0;
  const ticker = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
  }, 1);
  await work();
  clearInterval(ticker);
  return Math.max(longest, performance.now() - last);
}

export default async function bench(): Promise<BenchRow[]> {
  const engine = new LocalEngine();
  try {
    return await measure(engine);
  } finally {
    await engine.close();
  }
}

async function measure(engine: LocalEngine): Promise<BenchRow[]> {
  const photos = await Promise.all(Array.from({ length: 9 }, (_, index) => photo(index)));
  const rows: BenchRow[] = [];
  for (const [preset, iterations] of [
    ['1K', 15],
    ['2K', 9],
    ['4K', 5],
  ] as const) {
    rows.push({
      name: `local engine, ${preset} text-to-image, per image`,
      value: await perImage(engine, job({ size: preset }), iterations),
      unit: 'ms',
      note: `median of ${iterations}`,
    });
  }
  rows.push({
    name: 'local engine, 4K text-to-image + palette + watermark, per image',
    value: await perImage(
      engine,
      job({
        size: '4K',
        watermark: true,
        color_palette: PALETTE,
      }),
      5,
    ),
    unit: 'ms',
    note: 'median of 5',
  });
  rows.push({
    name: 'local engine, 2K with 9 input images (1600x1200 JPEG), per image',
    value: await perImage(engine, job({ size: '2K' }, photos), 7),
    unit: 'ms',
    note: 'median of 7, decoding included',
  });
  rows.push({
    name: 'local engine, 2K with 9 inputs, 2 bboxes on the last, per image',
    value: await perImage(
      engine,
      job(
        {
          size: '2K',
          watermark: true,
          bbox_list: [
            ...Array.from({ length: 8 }, () => []),
            [
              [100, 100, 700, 600],
              [900, 500, 1500, 1100],
            ],
          ],
        },
        photos,
      ),
      7,
    ),
    unit: 'ms',
    note: 'median of 7, decoding included',
  });
  const paletteJob = job({ size: '4K', watermark: true, color_palette: PALETTE });
  const pauses: number[] = [];
  for (let run = 0; run < 5; run++) {
    pauses.push(await longestPauseMs(() => outputOf(engine.generate(paletteJob))));
  }
  rows.push({
    name: 'event loop longest pause during a 4K palette + watermark render',
    value: Math.max(...pauses),
    unit: 'ms',
    note: 'worst of 5, 1 ms timer',
  });
  return rows;
}
