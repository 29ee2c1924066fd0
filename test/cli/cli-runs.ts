import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { runCli } from '../../src/cli/main.js';

/** What one run of the command line did. */
export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

type Environment = Readonly<Record<string, string | undefined>>;

/** Runs one command in this process, through the same dispatch as bin/imagegate. */
export async function runInProcess(env: Environment, ...args: string[]): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const code = await runCli({
    args,
    env,
    stdout: { write: (text) => (stdout += text) },
    stderr: { write: (text) => (stderr += text) },
  });
  return { code, stdout, stderr };
}

const ENTRY = path.resolve('src/cli/entry.ts');
const execFileAsync = promisify(execFile);

/**
 * Runs the command line's entry point as its own process, as users do: this alone proves the
 * wiring to argv, env, the standard streams and the exit code, at a second of start-up per run.
 */
export async function runSpawned(env: NodeJS.ProcessEnv, ...args: string[]): Promise<CliRun> {
  try {
    const { stdout, stderr } = await execFileAsync(
      process.execPath,
      ['--import', 'tsx', ENTRY, ...args],
      { env },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as CliRun;
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}
