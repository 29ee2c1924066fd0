import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';

const START_TIMEOUT_MS = 30_000;

/** How a process ended: its exit code, or the signal that killed it. */
export interface Ending {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A server process that has printed "listening on http://...". */
export interface ListeningProcess {
  url: string;
  child: ChildProcess;
  ended: Promise<Ending>;
  /** Everything it wrote to stdout and stderr so far, for failure messages. */
  output(): string;
}

/**
 * Spawns `command` (on loopback, PORT 0: the server picks a free port and prints it) and waits
 * until it says where it listens.
 */
export async function startListeningProcess(
  command: string,
  args: readonly string[],
  env: Record<string, string>,
  options: { cwd?: string } = {},
): Promise<ListeningProcess> {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: { ...process.env, HOST: '127.0.0.1', PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const ended = once(child, 'exit').then(([code, signal]) => ({
    code: code as number | null,
    signal: signal as NodeJS.Signals | null,
  }));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${command} did not start listening in time:\n${output}`));
    }, START_TIMEOUT_MS);
    child.stdout?.on('data', () => {
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match === null) return;
      clearTimeout(timer);
      resolve(match[1] as string);
    });
    void ended.then((ending) => {
      clearTimeout(timer);
      reject(
        new Error(`${command} ended (${JSON.stringify(ending)}) before listening:\n${output}`),
      );
    });
  });
  return { url, child, ended, output: () => output };
}
