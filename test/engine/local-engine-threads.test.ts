import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { GatewayError } from '../../src/errors/gateway-error.js';
import { LocalEngine } from '../../src/engine/local/local-engine.js';
import { bmp24 } from './bmp-fixtures.js';
import {
  body,
  jobFor,
  loadedImage,
  MODEL_A,
  syntheticInput,
  syntheticPixels,
} from './engine-fixtures.js';
import { outputOf } from '../../src/engine/engine-run.js';

const PALETTE = [
  { hex: '#112233', ratio: '40.00%' },
  { hex: '#E4A11B', ratio: '35.50%' },
  { hex: '#8FC1E3', ratio: '24.50%' },
];

/** Runs `work` while a timer ticks every few ms; returns the longest gap between ticks. */
async function longestEventLoopPause(work: () => Promise<unknown>): Promise<number> {
  let last = performance.now();
  let longest = 0;
  const ticker = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
  }, 5);
  try {
    await work();
  } finally {
    clearInterval(ticker);
  }
  return Math.max(longest, performance.now() - last);
}

describe('LocalEngine worker threads', () => {
  it('keeps the event loop responsive while a 4K palette image renders', async () => {
    const engine = new LocalEngine({ workers: 1 });
    try {
      const job = () =>
        jobFor(body(MODEL_A, 'a red fox in the snow', { size: '4K', color_palette: PALETTE }));
      // The first job starts the worker and loads its modules; measure a warm render.
      await outputOf(engine.generate(job()));
      let renderMs = 0;
      const pause = await longestEventLoopPause(async () => {
        const started = performance.now();
        const output = await outputOf(engine.generate(job()));
        renderMs = performance.now() - started;
        assert.equal(output.width, 4096);
      });
      // On the main thread the pause was the whole render (hundreds of ms); relative to the
      // render time so a slow, loaded machine does not fail it.
      assert.ok(
        pause < Math.max(100, renderMs / 4),
        `longest pause ${pause.toFixed(1)} ms during a ${renderMs.toFixed(1)} ms render`,
      );
    } finally {
      await engine.close();
    }
  });

  it("renders one caller's images while another caller's inputs are still being decoded", async () => {
    const engine = new LocalEngine({ workers: 1 });
    try {
      // Nine 17 MB bitmaps: their decoding keeps a thread busy for a while.
      const bitmap = bmp24(syntheticPixels(2400, 2400, 1));
      const inputs = Array.from({ length: 9 }, (_, index) =>
        loadedImage(bitmap, 'bmp', 2400, 2400, index),
      );
      const heavy = jobFor(body(MODEL_A, 'nine big inputs', { size: '1K' }, 9), { inputs });
      const light = () => jobFor(body(MODEL_A, 'no inputs at all', { size: '1K' }));
      // Both kinds of thread started and warm.
      await outputOf(
        engine.generate(jobFor(body(MODEL_A, 'warm', { size: '1K' }, 1), { inputs: [inputs[0]!] })),
      );
      await outputOf(engine.generate(light()));

      const started = performance.now();
      const heavyDone = outputOf(engine.generate(heavy)).then(() => performance.now() - started);
      const lightMs = await outputOf(engine.generate(light())).then(
        () => performance.now() - started,
      );
      const heavyMs = await heavyDone;
      // Behind the heavy job in one lane, the light one would end after it. The order, not a
      // ratio of times: beside other test files on two cores, the lanes' threads share the CPU.
      assert.ok(
        lightMs < heavyMs,
        `the light request took ${lightMs.toFixed(0)} ms beside ${heavyMs.toFixed(0)} ms`,
      );
    } finally {
      await engine.close();
    }
  });

  it('brings an InvalidImage from a worker back as the same GatewayError, path included', async () => {
    const engine = new LocalEngine();
    try {
      const inputs = [
        await syntheticInput(400, 300, 0, 'png', 0),
        loadedImage(Buffer.from('BM but not really a bitmap'), 'bmp', 400, 300, 1),
        await syntheticInput(400, 300, 2, 'png', 2),
      ];
      await assert.rejects(
        outputOf(engine.generate(jobFor(body(MODEL_A, 'x', { size: '1K' }, 3), { inputs }))),
        (error) =>
          error instanceof GatewayError &&
          error.code === 'InvalidImage' &&
          error.status === 400 &&
          error.message.startsWith('input.messages[0].content[1].image: image could not be'),
      );
    } finally {
      await engine.close();
    }
  });

  it('refuses work after close()', async () => {
    const engine = new LocalEngine();
    await outputOf(engine.generate(jobFor(body(MODEL_A, 'x', { size: '768*768' }))));
    await engine.close();
    await assert.rejects(
      outputOf(engine.generate(jobFor(body(MODEL_A, 'x', { size: '768*768' })))),
    );
  });

  it('lets the process exit once the router that owns the engine is closed', async () => {
    const script = fileURLToPath(new URL('./close-and-exit.ts', import.meta.url));
    const child = spawn(process.execPath, ['--import', 'tsx', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    const exitCode = await new Promise<number | null>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`child still running after 20 s; it printed: ${stdout}`));
      }, 20_000);
      child.on('exit', (code) => {
        clearTimeout(timer);
        resolve(code);
      });
    });
    assert.equal(exitCode, 0);
    const seen = JSON.parse(stdout) as {
      images: number;
      threadsWhileOpen?: number;
      threadsAfterClose?: number;
    };
    assert.equal(seen.images, 1);
    if (seen.threadsWhileOpen !== undefined && seen.threadsAfterClose !== undefined) {
      assert.ok(seen.threadsAfterClose < seen.threadsWhileOpen, JSON.stringify(seen));
    }
  });
});
