import { GatewayError } from '../errors/gateway-error.js';

/**
 * An engine's failure after it tried at least one channel: the caller sees the same code,
 * message and headers; the usage ledger also learns which channel was tried last and how long
 * the upstream attempts took.
 */
export class ChannelFailure extends GatewayError {
  constructor(
    cause: GatewayError,
    readonly channel: string,
    readonly upstreamMs: number,
  ) {
    super(cause.code, cause.message, { ...cause.headers });
    this.name = 'ChannelFailure';
  }
}
