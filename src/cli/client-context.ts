import type { ProgressStream } from './progress.js';

/** What a client command (generate, tasks) reads from and writes to. */
export interface ClientContext {
  env: Readonly<Record<string, string | undefined>>;
  stdout: ProgressStream;
  stderr: { write(text: string): unknown };
  /** Aborts on Ctrl-C (SIGINT): a stream is dropped, a submitted task canceled. */
  interrupt?: AbortSignal;
}
