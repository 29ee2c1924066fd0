import { createGateway, type Gateway } from './bootstrap/create-gateway.js';
import { reloadChannelsOnSignal } from './bootstrap/reload-channels-on-signal.js';
import { VERSION } from './bootstrap/version.js';
import { ConfigError, loadConfig } from './config/load-config.js';
import { generationPaths } from './domain/api-paths.js';
import { releaseExternalMemoryAfterBursts } from './support/external-memory-release.js';

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
  releaseExternalMemoryAfterBursts();
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) {
      // A second signal: stop taking in queued connections and waiting for requests in flight.
      app.server.close();
      app.server.closeAllConnections();
      return;
    }
    closing = true;
    void drainAndExit(gateway, config.shutdownTimeoutMs, signal);
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
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
      ...(config.console === 'on' ? [`  console:   ${address}/console/`] : []),
      `  get a token:  npx imagegate token create --name my-first-token --admin`,
      '    (run it in this directory; paste the token it prints into the console to sign in)',
      '',
    ].join('\n') + '\n',
  );
}

/** After the drain deadline, closing must still finish: past this the process exits anyway. */
const CLOSE_GRACE_MS = 5000;

/**
 * Stops accepting connections, lets requests in flight finish for up to `deadlineMs`, then closes
 * the connections still open (their requests stop and bill nothing), writes the ledger's last rows
 * and exits 0.
 */
async function drainAndExit(gateway: Gateway, deadlineMs: number, signal: string): Promise<void> {
  const { app } = gateway;
  app.log.info({ signal, deadline_ms: deadlineMs }, 'shutting down: draining requests in flight');
  const deadline = setTimeout(() => {
    app.log.warn('shutdown deadline reached: closing the connections still open');
    app.server.closeAllConnections();
  }, deadlineMs);
  const backstop = setTimeout(() => {
    app.log.error('shutdown did not finish in time; exiting');
    process.exit(1);
  }, deadlineMs + CLOSE_GRACE_MS);
  backstop.unref();
  let exitCode = 0;
  try {
    await gateway.close();
  } catch (error) {
    app.log.error({ err: error }, 'shutdown failed');
    exitCode = 1;
  }
  clearTimeout(deadline);
  app.log.info({ exit_code: exitCode }, 'shut down');
  process.exit(exitCode);
}

main().catch((error: unknown) => {
  process.stderr.write(
    `imagegate: failed to start: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exit(1);
});
