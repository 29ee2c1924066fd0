import type { FastifyInstance } from 'fastify';
import { NotReadyError } from '../../health/readiness.js';

/** Liveness says the process answers; readiness says it can serve: database and storage reachable. */
export function registerHealthRoutes(app: FastifyInstance, checkReady: () => Promise<void>): void {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (request, reply) => {
    try {
      await checkReady();
      return { status: 'ready' };
    } catch (error) {
      request.log.warn({ err: error }, 'not ready');
      const failing = error instanceof NotReadyError ? error.failing : ['a dependency'];
      return reply
        .code(503)
        .send({ status: 'unavailable', reason: `${failing.join(', ')} not reachable` });
    }
  });
}
