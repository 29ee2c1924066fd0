import { GatewayError } from '../errors/gateway-error.js';

/** A request held up past its reservation or Idempotency-Key claim, which lapsed: nothing billed. */
export function leaseLost(): GatewayError {
  return new GatewayError(
    'Overloaded',
    'this request was held up in the gateway past its reservation, which has lapsed; nothing was billed, retry it',
    { 'Retry-After': '1' },
  );
}
