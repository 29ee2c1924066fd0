import { openServices } from '../bootstrap/open-services.js';
import { loadConfig } from '../config/load-config.js';
import { runTokenCommand } from './token-command.js';
import { runUsageCommand } from './usage-command.js';

/**
 * `imagegate token` and `imagegate usage`: they open the server's configuration and database.
 * Loaded only for them, so that the client commands start without the server's modules.
 */
export async function runOperatorCommand(
  command: 'token' | 'usage',
  args: string[],
  env: Readonly<Record<string, string | undefined>>,
  out: (text: string) => void,
): Promise<void> {
  const services = await openServices(loadConfig(env));
  try {
    const output = { out };
    if (command === 'usage') await runUsageCommand(args, services, output);
    else await runTokenCommand(args, services, output);
  } finally {
    await services.close();
  }
}
