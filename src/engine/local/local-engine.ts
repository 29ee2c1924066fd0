import type { Engine, EngineJob, EngineOutput, PngImage } from '../engine.js';
import { defaultWorkerCount, RenderPool } from './render-pool.js';
import { planRender } from './render-plan.js';
import type { SharedPreparedInputs } from './render-tasks.js';
import { sharedCopy } from './shared-bytes.js';

export interface LocalEngineOptions {
  /** Worker threads that render; by default one fewer than the cores, at least one. */
  workers?: number;
}

const NO_INPUTS: SharedPreparedInputs = { base: undefined, referenceColours: [] };

/**
 * The built-in engine: a deterministic renderer with no model and no network, for development,
 * demos and CI. It honours every parameter visibly (size, count, palette, boxes, watermark, and
 * the input images) so clients can be tested against it, and the same job always gives the same
 * PNG bytes. The pixel work runs in worker threads, never on the event loop. See
 * docs/local-engine.md.
 */
export class LocalEngine implements Engine<PngImage> {
  private readonly pool: RenderPool;

  constructor(options: LocalEngineOptions = {}) {
    this.pool = new RenderPool(options.workers ?? defaultWorkerCount());
  }

  async generate(job: EngineJob): Promise<EngineOutput<PngImage>> {
    const { signal } = job;
    signal.throwIfAborted();
    const plan = planRender(job);
    const { width, height } = job.output;
    const { base, referenceColours } =
      job.inputs.length === 0
        ? NO_INPUTS
        : await this.pool.prepareInputs(
            {
              kind: 'prepareInputs',
              inputs: job.inputs.map((image) => ({ ...image, bytes: sharedCopy(image.bytes) })),
              output: job.output,
              boxesOfInput: plan.boxesOfInput,
            },
            signal,
          );

    // One image at a time: concurrent jobs interleave in the pool's queue, so a request for
    // four images does not hold every worker while a request for one waits.
    const images: PngImage[] = [];
    for (let index = 0; index < plan.imageCount; index++) {
      const recipe = {
        width,
        height,
        familySeed: plan.familySeed,
        detailed: plan.detailed,
        index,
        base,
        referenceColours,
        palette: plan.palette,
        watermark: plan.watermark,
      };
      const bytes = await this.pool.renderPng({ kind: 'renderPng', recipe }, signal);
      images.push({ kind: 'png', bytes });
    }
    return { images, width, height };
  }

  /** Ends the worker threads once the images being rendered are done. */
  close(): Promise<void> {
    return this.pool.close();
  }
}
