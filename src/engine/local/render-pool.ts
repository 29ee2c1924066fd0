import { availableParallelism } from 'node:os';
// Loaded here as well as in the workers: on glibc Linux, sharp's shared libraries must stay
// loaded in the main thread, or a worker exiting unloads them under the others.
import 'sharp';
import type {
  PrepareInputsTask,
  RenderedPng,
  RenderPngTask,
  SharedPreparedInputs,
} from './render-tasks.js';
import { unwrap } from './task-outcome.js';
import { WorkerLane } from './worker-lane.js';

/**
 * One core stays with the event loop (HTTP, JSON, the other stages) and with libvips' own
 * threads, which decode and encode for the workers; the rest render.
 */
export function defaultWorkerCount(): number {
  return Math.max(1, availableParallelism() - 1);
}

/**
 * The local engine's worker threads, in two lanes of `workers` threads each: one decodes input
 * images, the other renders. A caller's inputs, however slow to decode, never hold up another
 * caller's images: renders do not queue behind decoding.
 */
export class RenderPool {
  private readonly decoding: WorkerLane;
  private readonly rendering: WorkerLane;

  constructor(workers: number) {
    if (!Number.isInteger(workers) || workers < 1) {
      throw new RangeError(`workers must be a whole number of at least 1, got ${workers}`);
    }
    this.decoding = new WorkerLane(workers);
    this.rendering = new WorkerLane(workers);
  }

  async prepareInputs(task: PrepareInputsTask, signal: AbortSignal): Promise<SharedPreparedInputs> {
    return unwrap(await this.decoding.run<SharedPreparedInputs>(task, signal));
  }

  async renderPng(task: RenderPngTask, signal: AbortSignal): Promise<Buffer> {
    const { png } = unwrap(await this.rendering.run<RenderedPng>(task, signal));
    return Buffer.from(png);
  }

  /** Lets running tasks finish, then ends the threads. */
  async close(): Promise<void> {
    await Promise.all([this.decoding.close(), this.rendering.close()]);
  }
}
