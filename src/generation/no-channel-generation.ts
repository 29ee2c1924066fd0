import { GatewayError } from '../errors/gateway-error.js';
import type { GenerationService } from './generation-service.js';

/** The service when no engine is configured: an honest 503, never a fake success. */
export const noChannelGeneration: GenerationService = {
  async generate(request) {
    throw new GatewayError(
      'NoAvailableChannel',
      `no channel is configured for model ${request.model}`,
    );
  },
};
