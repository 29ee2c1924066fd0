import type { Server } from 'node:http';
import { promisify } from 'node:util';
import { eventually } from './waits.js';

/**
 * Resolves once `server` holds exactly `count` connections: after a caller hangs up, the moment
 * the gateway has seen the close (its request's `close` listeners run on that same event).
 */
export async function connectionsOpen(server: Server, count: number): Promise<void> {
  const open = promisify(server.getConnections.bind(server));
  await eventually(
    async () => (await open()) === count,
    10_000,
    `the server holding ${count} connections`,
  );
}
