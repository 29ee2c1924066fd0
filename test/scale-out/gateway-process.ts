import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';

const MAIN = path.resolve('src/main.ts');
const START_TIMEOUT_MS = 30_000;

/** One gateway server process (src/main.ts, as `npm start` runs it) on a loopback port. */
export interface GatewayProcess {
  url: string;
  child: ChildProcess;
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
  /** What it wrote to stderr, for failure messages. */
  stderr(): string;
  /** What it has written to stdout so far (its JSON logs). */
  stdout(): string;
}

export async function startGatewayProcess(env: Record<string, string>): Promise<GatewayProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN], {
    env: { ...process.env, HOST: '127.0.0.1', PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`gateway did not start in time:\n${stdout}\n${stderr}`));
    }, START_TIMEOUT_MS);
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = /listening on (http:\/\/[^\s]+)/.exec(stdout);
      if (match !== null) {
        clearTimeout(timer);
        resolve(match[1] as string);
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`gateway exited with ${code} before listening:\n${stderr}`));
    });
  });
  // Keep draining stdout so that the process never blocks on a full pipe.
  child.stdout?.resume();
  return { url, child, exited, stderr: () => stderr, stdout: () => stdout };
}
