import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
// Loaded here as well as in the workers: on glibc Linux, sharp's shared libraries must stay
// loaded in the main thread, or a worker exiting unloads them under the others.
import 'sharp';
import type {
  PrepareInputsTask,
  RenderedPng,
  RenderPngTask,
  RenderTask,
  SharedPreparedInputs,
} from './render-tasks.js';
import { type TaskOutcome, unwrap } from './task-outcome.js';

/**
 * One core stays with the event loop (HTTP, JSON, the other stages) and with libvips' own
 * threads, which decode and encode for the workers; the rest render.
 */
export function defaultWorkerCount(): number {
  return Math.max(1, availableParallelism() - 1);
}

/** Workers beyond the first are let go after this long idle. */
const IDLE_TIMEOUT_MS = 30_000;

/**
 * The same module as source under tsx (tests, bench) and as compiled JavaScript in dist/: the
 * worker file sits beside this one with the same extension.
 */
function workerFile(): string {
  const extension = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
  return new URL(`./render-worker${extension}`, import.meta.url).href;
}

/**
 * The local engine's worker threads. Started on first use, so a gateway with no local channel,
 * or one that never sends it a job, starts no threads. Idle workers do not keep the process
 * alive; close() ends them for good.
 */
export class RenderPool {
  private pool: Piscina<RenderTask, TaskOutcome<unknown>> | undefined;
  private closed = false;

  constructor(private readonly workers: number) {
    if (!Number.isInteger(workers) || workers < 1) {
      throw new RangeError(`workers must be a whole number of at least 1, got ${workers}`);
    }
  }

  async prepareInputs(task: PrepareInputsTask, signal: AbortSignal): Promise<SharedPreparedInputs> {
    return unwrap(await this.run<SharedPreparedInputs>(task, signal));
  }

  async renderPng(task: RenderPngTask, signal: AbortSignal): Promise<Buffer> {
    const { png } = unwrap(await this.run<RenderedPng>(task, signal));
    return Buffer.from(png);
  }

  /** Lets running tasks finish, then ends the threads. */
  async close(): Promise<void> {
    this.closed = true;
    const pool = this.pool;
    this.pool = undefined;
    await pool?.close();
  }

  private async run<T>(task: RenderTask, signal: AbortSignal): Promise<TaskOutcome<T>> {
    signal.throwIfAborted();
    try {
      // The worker answers each kind of task with the TaskOutcome its caller here expects.
      return (await this.started().run(task, { signal })) as TaskOutcome<T>;
    } catch (error) {
      // Piscina wraps the reason in its own AbortError; callers expect the signal's reason, as
      // from throwIfAborted().
      signal.throwIfAborted();
      throw error;
    }
  }

  private started(): Piscina<RenderTask, TaskOutcome<unknown>> {
    if (this.closed) throw new Error('the local engine has been closed');
    if (this.pool === undefined) {
      this.pool = new Piscina({
        filename: workerFile(),
        minThreads: 1,
        maxThreads: this.workers,
        idleTimeout: IDLE_TIMEOUT_MS,
      });
      // A worker that dies while idle is replaced by the pool; unheard, this event would end the
      // process. A worker that dies during a task already fails that task, for its caller.
      this.pool.on('error', (error: unknown) => {
        process.emitWarning(`a local engine worker failed while idle: ${String(error)}`);
      });
    }
    return this.pool;
  }
}
