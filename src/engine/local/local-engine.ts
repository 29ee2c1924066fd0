import type { EngineJob, EngineRun, PngImage } from '../engine.js';
import type { EngineTurn, TurnTakingEngine } from './engine-turns.js';
import { defaultWorkerCount, RenderPool } from './render-pool.js';
import { planRender } from './render-plan.js';
import type { SharedPreparedInputs } from './render-tasks.js';
import { sharedCopy } from './shared-bytes.js';
import { GatewayError } from '../../errors/gateway-error.js';
import { type Turn, TurnQueue } from '../../support/turn-queue.js';
import { asAbortSignal } from '../../support/cancellation.js';

export interface LocalEngineOptions {
  /** Worker threads that render; by default one fewer than the cores, at least one. */
  workers?: number;
  /**
   * Jobs that may wait for a turn while others run; one more is refused at once with 503
   * Overloaded. By default 16 per worker.
   */
  queueLimit?: number;
}

/**
 * Jobs running at once, per worker. Two keep every worker busy while a job's finished image
 * comes back and its next one is sent, and let a short job run beside a long one. Each running
 * job holds its inputs and decoded base picture in memory, so this is what bounds the engine's
 * memory; a waiting job holds nothing but its request.
 */
const RUNNING_JOBS_PER_WORKER = 2;
/**
 * Waiting jobs cost the engine no memory, only time: the last of them waits for about 18 jobs
 * to run on its worker (about a second at 2K, half a minute for four 4K images with a palette),
 * well inside a channel's time-out, while a burst of requests still finds room.
 */
const QUEUED_JOBS_PER_WORKER = 16;
/** Suggested to a refused caller: places free up as fast as running jobs finish. */
const RETRY_AFTER_SECONDS = 1;

const NO_INPUTS: SharedPreparedInputs = { base: undefined, referenceColours: [] };

/**
 * The built-in engine: a deterministic renderer with no model and no network, for development,
 * demos and CI. It honours every parameter visibly (size, count, palette, boxes, watermark, and
 * the input images) so clients can be tested against it, and the same job always gives the same
 * PNG bytes. The pixel work runs in worker threads, never on the event loop; jobs take turns, so
 * a flood of them is refused at once rather than queued without end. See docs/local-engine.md.
 */
export class LocalEngine implements TurnTakingEngine<PngImage> {
  private readonly pool: RenderPool;
  private readonly turns: TurnQueue;
  private closed = false;

  constructor(options: LocalEngineOptions = {}) {
    const workers = options.workers ?? defaultWorkerCount();
    this.pool = new RenderPool(workers);
    const running = RUNNING_JOBS_PER_WORKER * workers;
    const waiting = options.queueLimit ?? QUEUED_JOBS_PER_WORKER * workers;
    this.turns = new TurnQueue({
      running,
      waiting,
      refusal: () =>
        new GatewayError(
          'Overloaded',
          `the local engine is busy: ${running} jobs running and ${waiting} waiting, the most it queues; retry shortly`,
          { 'Retry-After': String(RETRY_AFTER_SECONDS) },
        ),
    });
  }

  /** Jobs rendering now and jobs waiting for a turn, as they stand. */
  jobs(): { running: number; waiting: number } {
    return { running: this.turns.running, waiting: this.turns.waiting };
  }

  async *generate(job: EngineJob): EngineRun<PngImage> {
    // The worker pool wants a real AbortSignal: one for the whole job.
    const signal = asAbortSignal(job.signal);
    const turn = await this.waitForTurn(signal);
    return yield* turn.generate({ ...job, signal });
  }

  async waitForTurn(signal: AbortSignal): Promise<EngineTurn<PngImage>> {
    if (this.closed) throw new Error('the local engine has been closed');
    const turn = await this.turns.take(signal);
    return { generate: (job) => this.renderInTurn(job, turn) };
  }

  /** Refuses the jobs still waiting, and ends the worker threads once those running are done. */
  close(): Promise<void> {
    this.closed = true;
    this.turns.refuseWaiting(new Error('the local engine has been closed'));
    return this.pool.close();
  }

  private async *renderInTurn(job: EngineJob, turn: Turn): EngineRun<PngImage> {
    try {
      return yield* this.render(job);
    } finally {
      turn.release();
    }
  }

  /**
   * Renders the job's images one after another, yielding each as it is done. The next image is
   * sent to the pool only when the caller asks for it, so a caller that stops leaves no render
   * running.
   */
  private async *render(job: EngineJob): EngineRun<PngImage> {
    const signal = asAbortSignal(job.signal);
    signal.throwIfAborted();
    const plan = planRender(job);
    const { width, height } = job.output;
    const { base, referenceColours } =
      job.inputs.length === 0
        ? NO_INPUTS
        : await this.pool.prepareInputs(
            {
              kind: 'prepareInputs',
              inputs: job.inputs.map(({ path, format, width, height, bytes }) => ({
                path,
                format,
                width,
                height,
                bytes: sharedCopy(bytes()),
              })),
              output: job.output,
              boxesOfInput: plan.boxesOfInput,
            },
            signal,
          );

    // One image at a time: the running jobs' tasks interleave in the pool's queue, so a request
    // for four images does not hold every worker while a request for one waits.
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
      const image: PngImage = { kind: 'png', bytes };
      images.push(image);
      yield { image, index };
    }
    return { images, width, height };
  }
}
