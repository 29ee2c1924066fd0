import { type ChildProcess, spawn, type SpawnOptions } from 'node:child_process';
import { once } from 'node:events';

const STOP_GRACE_MS = 15_000;

/**
 * Every process the proxy bench starts, so that all of them are ended when it finishes, also when
 * it fails half-way, is interrupted, or exits early. Each child leads a process group of its own,
 * and signals go to the whole group: nginx's worker ends with its master, even on SIGKILL.
 */
export class Children {
  private readonly running = new Set<ChildProcess>();
  private readonly killAll = () => {
    for (const child of this.running) signalGroup(child, 'SIGKILL');
  };
  private readonly interrupted = (signal: NodeJS.Signals) => {
    this.killAll();
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };

  constructor() {
    process.on('exit', this.killAll);
    process.on('SIGINT', this.interrupted);
    process.on('SIGTERM', this.interrupted);
  }

  spawn(command: string, args: readonly string[], options: SpawnOptions): ChildProcess {
    const child = spawn(command, args, { ...options, detached: true });
    this.running.add(child);
    child.once('exit', () => this.running.delete(child));
    child.once('error', () => this.running.delete(child));
    return child;
  }

  /** SIGTERM, then SIGKILL if it has not exited within the grace time. */
  async stop(child: ChildProcess): Promise<void> {
    if (hasExited(child)) return;
    const exited = once(child, 'exit');
    signalGroup(child, 'SIGTERM');
    const timer = setTimeout(() => signalGroup(child, 'SIGKILL'), STOP_GRACE_MS);
    await exited;
    clearTimeout(timer);
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.running].map((child) => this.stop(child)));
    process.off('exit', this.killAll);
    process.off('SIGINT', this.interrupted);
    process.off('SIGTERM', this.interrupted);
  }
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // the group is already gone
  }
}

export function hasExited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

/** Resolves with the first stdout line that `pattern` matches; rejects if the child exits first. */
export async function firstMatch(
  child: ChildProcess,
  pattern: RegExp,
  what: string,
  timeoutMs = 30_000,
): Promise<RegExpExecArray> {
  let seen = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => fail(`${what} did not start within ${timeoutMs} ms`), timeoutMs);
    const onData = (chunk: Buffer) => {
      seen += chunk.toString();
      const match = pattern.exec(seen);
      if (match === null) return;
      done();
      resolve(match);
    };
    const onExit = (code: number | null) => fail(`${what} exited with ${code} before starting`);
    const done = () => {
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.off('exit', onExit);
      // Keep draining, so that the child never blocks on a full pipe.
      child.stdout?.resume();
    };
    const fail = (message: string) => {
      done();
      reject(new Error(`${message}:\n${seen}`));
    };
    child.stdout?.on('data', onData);
    child.once('exit', onExit);
  });
}
