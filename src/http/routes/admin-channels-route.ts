import type { FastifyInstance } from 'fastify';
import type { ChannelStatus } from '../../channels/channel-status.js';
import { requireAdmin } from '../admin-auth.js';
import type { Authenticator } from '../../auth/authenticator.js';

export interface ChannelStatusSource {
  status(): ChannelStatus[];
}

export interface AdminChannelsRouteOptions {
  authenticator: Authenticator;
  channels: ChannelStatusSource;
}

/**
 * GET /admin/channels: the running channel set with each channel's health, breaker state and
 * counters, for admin tokens. Shows whether a channel has a key, never the key.
 */
export function registerAdminChannelsRoute(
  app: FastifyInstance,
  options: AdminChannelsRouteOptions,
): void {
  app.get(
    '/admin/channels',
    { onRequest: requireAdmin(options.authenticator) },
    async (_request, reply) => {
      reply.header('cache-control', 'no-store');
      return { channels: options.channels.status() };
    },
  );
}
