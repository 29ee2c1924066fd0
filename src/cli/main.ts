import { openServices } from '../bootstrap/open-services.js';
import { ConfigError, loadConfig } from '../config/load-config.js';
import { runTokenCommand, TOKEN_USAGE } from './token-command.js';
import { runUsageCommand, USAGE_USAGE } from './usage-command.js';
import { UsageError } from './usage-error.js';

const USAGE = `imagegate: the image-generation gateway's command line
Uses the same configuration (IMAGEGATE_* variables, IMAGEGATE_CONFIG) and database as the server.

${TOKEN_USAGE}
${USAGE_USAGE}
Start the server with: npm start`;

/** Where the CLI writes; process.stdout and process.stderr fit. */
export interface TextStream {
  write(text: string): unknown;
}

/** Everything one CLI run reads from and writes to: the process's, or a test's. */
export interface CliContext {
  /** The arguments after the program name, e.g. `['token', 'list']`. */
  args: readonly string[];
  env: Readonly<Record<string, string | undefined>>;
  stdout: TextStream;
  stderr: TextStream;
}

/** Runs one CLI command; returns the exit code. */
export async function runCli({ args, env, stdout, stderr }: CliContext): Promise<number> {
  const [command, ...rest] = args;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    stdout.write(`${USAGE}\n`);
    return command === undefined ? 2 : 0;
  }
  try {
    if (command !== 'token' && command !== 'usage')
      throw new UsageError(`unknown command "${command}"`, USAGE);
    const services = await openServices(loadConfig(env));
    try {
      const output = { out: (text: string) => stdout.write(text) };
      if (command === 'usage') await runUsageCommand(rest, services, output);
      else await runTokenCommand(rest, services, output);
    } finally {
      await services.close();
    }
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      stderr.write(
        `imagegate: ${error.message}\n${error.usage === undefined ? '' : `${error.usage}\n`}`,
      );
      return 2;
    }
    if (error instanceof ConfigError) {
      stderr.write(`imagegate: ${error.message}\n`);
      return 1;
    }
    stderr.write(`imagegate: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}
