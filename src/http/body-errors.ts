import { GatewayError } from '../errors/gateway-error.js';

/** How a request body that cannot be read as JSON is answered, by Fastify's parsers and ours. */
export const bodyErrors = {
  tooLarge: () =>
    new GatewayError('RequestTooLarge', 'request body is larger than the configured limit'),
  wrongMediaType: () =>
    new GatewayError('InvalidParameter', 'Content-Type must be application/json'),
  empty: () => new GatewayError('InvalidParameter', 'body: is empty, expected a JSON object'),
  notJson: () => new GatewayError('InvalidParameter', 'body: is not valid JSON'),
  prototypeKey: () =>
    new GatewayError(
      'InvalidParameter',
      'body: holds a key named __proto__, or constructor with prototype in it; no field of this API has such a name',
    ),
  lengthMismatch: () =>
    new GatewayError('InvalidParameter', 'body: length does not match Content-Length'),
};
