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

/** Runs one CLI command; returns the exit code. */
export async function runCli(
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  const [command, ...rest] = args;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(`${USAGE}\n`);
    return command === undefined ? 2 : 0;
  }
  try {
    if (command !== 'token' && command !== 'usage')
      throw new UsageError(`unknown command "${command}"`, USAGE);
    const services = await openServices(loadConfig(env));
    try {
      const output = { out: (text: string) => process.stdout.write(text) };
      if (command === 'usage') await runUsageCommand(rest, services, output);
      else await runTokenCommand(rest, services, output);
    } finally {
      await services.close();
    }
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(
        `imagegate: ${error.message}\n${error.usage === undefined ? '' : `${error.usage}\n`}`,
      );
      return 2;
    }
    if (error instanceof ConfigError) {
      process.stderr.write(`imagegate: ${error.message}\n`);
      return 1;
    }
    process.stderr.write(`imagegate: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}
