import type { FastifyInstance } from 'fastify';
import type { Authenticator } from '../../auth/authenticator.js';
import type { Config } from '../../config/config.js';
import type { GatewayMetrics } from '../../metrics/gateway-metrics.js';
import { requireAdmin } from '../admin-auth.js';

export interface MetricsRouteOptions {
  metrics: GatewayMetrics;
  /** `admin`: an admin token is needed; `public`: anyone; `off`: the route does not exist. */
  access: Config['metrics'];
  authenticator: Authenticator;
}

/** GET /metrics: the gateway's metrics in Prometheus's text format. */
export function registerMetricsRoute(app: FastifyInstance, options: MetricsRouteOptions): void {
  if (options.access === 'off') return;
  app.get(
    '/metrics',
    options.access === 'admin' ? { onRequest: requireAdmin(options.authenticator) } : {},
    async (_request, reply) =>
      reply.type(options.metrics.contentType).send(await options.metrics.scrape()),
  );
}
