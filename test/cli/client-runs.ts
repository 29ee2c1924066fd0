import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { pngSize } from '../../src/channels/png-size.js';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway.js';
import type { CliRun } from './cli-runs.js';

const ENTRY = path.resolve('src/cli/entry.ts');

/** A gateway on its local engine, listening, and a caller's token for the client commands. */
export interface ClientGateway {
  gateway: TestGateway;
  url: string;
  /** The environment a client command runs with: IMAGEGATE_URL and IMAGEGATE_TOKEN set. */
  env: NodeJS.ProcessEnv;
  /** The token's `Authorization` value, for the test's own calls. */
  authorization: string;
}

/** Starts one; the caller closes `gateway` when its tests are done. */
export async function startClientGateway(env: Record<string, string> = {}): Promise<ClientGateway> {
  const gateway = await startTestGateway({
    env: { IMAGEGATE_TASK_POLL_MS: '50', IMAGEGATE_SHUTDOWN_TIMEOUT_MS: '0', ...env },
  });
  const url = await gateway.listen();
  const authorization = await gateway.bearer({ name: 'cli-client' });
  const token = authorization.replace(/^Bearer /, '');
  const clientEnv = { ...process.env, IMAGEGATE_URL: url, IMAGEGATE_TOKEN: token };
  return { gateway, url, env: clientEnv, authorization };
}

/** A fresh directory for a run's images, removed after the test. */
export async function outputDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'imagegate-cli-out-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** `generate` of one 1K image as a task, saved into `dir`. */
export function asyncGenerateArgs(dir: string): string[] {
  return ['generate', 'a fox', '--size', '1K', '--async', '-o', dir];
}

/** A running client command, its output as it comes. */
export interface ClientProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** The run, once the process has exited (130 for a run that ended on SIGINT). */
  ended: Promise<CliRun>;
}

/** Starts `imagegate ARGS` as its own process, with pipes (not a terminal). */
export function spawnClient(env: NodeJS.ProcessEnv, args: readonly string[]): ClientProcess {
  return collect(spawn(process.execPath, ['--import', 'tsx', ENTRY, ...args], { env }));
}

/** Runs `imagegate ARGS` to its end, with pipes (not a terminal). */
export function runClient(env: NodeJS.ProcessEnv, ...args: string[]): Promise<CliRun> {
  return spawnClient(env, args).ended;
}

/**
 * Runs `imagegate ARGS` in a pseudo-terminal, through util-linux's `script`, so that its
 * stdout is a TTY; what the terminal showed is the run's stdout.
 */
export function runInTerminal(env: NodeJS.ProcessEnv, ...args: string[]): Promise<CliRun> {
  const command = [process.execPath, '--import', 'tsx', ENTRY, ...args].map(quoted).join(' ');
  return collect(
    spawn('script', ['-qefc', command, '/dev/null'], { env, stdio: ['pipe', 'pipe', 'pipe'] }),
  ).ended;
}

function quoted(argument: string): string {
  return `'${argument.replace(/'/g, `'\\''`)}'`;
}

function collect(child: ChildProcess): ClientProcess {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const ended = once(child, 'close').then(([code, signal]) => ({
    code: (code as number | null) ?? (signal === null ? 1 : 128),
    stdout,
    stderr,
  }));
  return { child, stdout: () => stdout, stderr: () => stderr, ended };
}

/** The PNG at `file`: its size from the signature and IHDR, or a failure naming the file. */
export async function pngAt(file: string): Promise<{ width: number; height: number }> {
  const size = pngSize(await readFile(file));
  if (size === undefined) throw new Error(`${file} is not a PNG`);
  return size;
}

/** A task's state, read over the task API as its caller. */
export async function taskState(client: ClientGateway, taskId: string): Promise<string> {
  const response = await fetch(`${client.url}/api/v1/tasks/${taskId}`, {
    headers: { Authorization: client.authorization },
  });
  const body = (await response.json()) as { output: { task_status: string } };
  return body.output.task_status;
}
