import { Piscina } from 'piscina';
import type { RenderTask } from './render-tasks.js';
import type { TaskOutcome } from './task-outcome.js';

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
 * A set of worker threads with its own task queue. Started on first use, so a lane that is
 * never sent a task starts no thread. Idle workers do not keep the process alive; close() ends
 * them for good.
 */
export class WorkerLane {
  private pool: Piscina<RenderTask, TaskOutcome<unknown>> | undefined;
  private closed = false;

  constructor(private readonly workers: number) {}

  async run<T>(task: RenderTask, signal: AbortSignal): Promise<TaskOutcome<T>> {
    signal.throwIfAborted();
    try {
      // The worker answers each kind of task with the TaskOutcome its caller expects.
      return (await this.started().run(task, { signal })) as TaskOutcome<T>;
    } catch (error) {
      // Piscina wraps the reason in its own AbortError; callers expect the signal's reason, as
      // from throwIfAborted().
      signal.throwIfAborted();
      throw error;
    }
  }

  /** Lets running tasks finish, then ends the threads. */
  async close(): Promise<void> {
    this.closed = true;
    const pool = this.pool;
    this.pool = undefined;
    await pool?.close();
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
