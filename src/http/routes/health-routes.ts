import type { FastifyInstance } from 'fastify';

/** Liveness says the process answers; readiness says it can serve, which needs the database. */
export function registerHealthRoutes(app: FastifyInstance, checkReady: () => Promise<void>): void {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (request, reply) => {
    try {
      await checkReady();
      return { status: 'ready' };
    } catch (error) {
      request.log.warn({ err: error }, 'not ready');
      return reply
        .code(503)
        .send({ status: 'unavailable', reason: 'the database is not reachable' });
    }
  });
}
