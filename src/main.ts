import { createGateway } from './bootstrap/create-gateway.js';
import { reloadChannelsOnSignal } from './bootstrap/reload-channels-on-signal.js';
import { VERSION } from './bootstrap/version.js';
import { ConfigError, loadConfig } from './config/load-config.js';
import { generationPaths } from './domain/api-paths.js';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`imagegate: ${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
  const gateway = await createGateway(config);
  const { app } = gateway;
  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'shutting down');
    await gateway.close();
  };
  process.once('SIGINT', () => void shutdown('SIGINT'));
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  reloadChannelsOnSignal({
    router: gateway.channels,
    loadConfig: () => loadConfig(),
    log: app.log,
  });

  const address = await gateway.listen();
  const [path] = generationPaths(config.routePrefix);
  process.stdout.write(
    [
      '',
      `imagegate ${VERSION} listening on ${address}`,
      `  endpoint:  POST ${address}${path}`,
      `  database:  ${config.database.kind === 'sqlite' ? config.database.file : 'PostgreSQL'}`,
      `  get a token:  npx imagegate token create --name my-first-token`,
      '',
    ].join('\n') + '\n',
  );
}

main().catch((error: unknown) => {
  process.stderr.write(
    `imagegate: failed to start: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exit(1);
});
