import { GatewayAnswerError } from '../client/answer-error.js';
import { CONNECTION_USAGE } from './client-settings.js';
import { GENERATE_USAGE } from './generate-options.js';
import { runGenerateCommand } from './generate-command.js';
import { Interrupted } from './interrupted.js';
import { runTasksCommand, TASKS_USAGE } from './tasks-command.js';
import { TOKEN_USAGE, USAGE_USAGE } from './operator-usage.js';
import { UsageError } from './usage-error.js';

const USAGE = `imagegate: the image-generation gateway's command line

Clients of a running gateway (IMAGEGATE_URL, IMAGEGATE_TOKEN; docs/cli.md):
${GENERATE_USAGE}
${TASKS_USAGE}
connection (generate and tasks):
${CONNECTION_USAGE}

Operator commands, on the server's own configuration (IMAGEGATE_* variables, IMAGEGATE_CONFIG)
and database:
${TOKEN_USAGE}
${USAGE_USAGE}
Start the server with: npm start`;

/** Where the CLI writes; process.stdout and process.stderr fit. */
export interface TextStream {
  write(text: string): unknown;
  /** A terminal: `generate` redraws its progress in place. */
  isTTY?: boolean;
  columns?: number;
}

/** Everything one CLI run reads from and writes to: the process's, or a test's. */
export interface CliContext {
  /** The arguments after the program name, e.g. `['token', 'list']`. */
  args: readonly string[];
  env: Readonly<Record<string, string | undefined>>;
  stdout: TextStream;
  stderr: TextStream;
  /** Aborts on Ctrl-C (SIGINT); the client commands stop what they started and exit 130. */
  interrupt?: AbortSignal;
}

/** Runs one CLI command; returns the exit code. */
export async function runCli(context: CliContext): Promise<number> {
  const { args, env, stdout, stderr } = context;
  const [command, ...rest] = args;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    stdout.write(`${USAGE}\n`);
    return command === undefined ? 2 : 0;
  }
  try {
    // The client commands talk to a gateway over HTTP: they never open its database or config.
    if (command === 'generate') return (await runGenerateCommand(rest, context), 0);
    if (command === 'tasks') return (await runTasksCommand(rest, context), 0);
    if (command !== 'token' && command !== 'usage')
      throw new UsageError(`unknown command "${command}"`, USAGE);
    const { runOperatorCommand } = await import('./operator-command.js');
    await runOperatorCommand(command, rest, env, (text) => stdout.write(text));
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      stderr.write(
        `imagegate: ${error.message}\n${error.usage === undefined ? '' : `${error.usage}\n`}`,
      );
      return 2;
    }
    if (error instanceof Interrupted) return 130;
    if (error instanceof GatewayAnswerError) {
      const id = error.requestId === undefined ? '' : ` (request ${error.requestId})`;
      stderr.write(`imagegate: ${error.code}: ${error.message}${id}\n`);
      return 1;
    }
    stderr.write(`imagegate: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}
