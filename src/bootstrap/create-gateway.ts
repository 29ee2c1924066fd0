import type { FastifyInstance } from 'fastify';
import type { Config } from '../config/config.js';
import type { GenerationService } from '../generation/generation-service.js';
import { noChannelGeneration } from '../generation/no-channel-generation.js';
import { buildApp } from '../http/app.js';
import { openServices, type Services } from './open-services.js';
import { VERSION } from './version.js';

export interface Gateway {
  app: FastifyInstance;
  services: Services;
  close(): Promise<void>;
}

/** Wires a whole gateway from its configuration; the server and the tests both start here. */
export async function createGateway(
  config: Config,
  now: () => number = Date.now,
): Promise<Gateway> {
  const services = await openServices(config, now);
  const generation: GenerationService = noChannelGeneration;
  const app = buildApp({
    config,
    authenticator: services.tokenVerifier,
    generation,
    checkReady: () => services.database.ping(),
    version: VERSION,
  });
  return {
    app,
    services,
    close: async () => {
      await app.close();
      await services.close();
    },
  };
}
