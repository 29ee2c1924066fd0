import { GatewayError } from '../errors/gateway-error.js';
import { describeByteLimit } from './image-limits.js';

export function invalidImage(path: string, problem: string): GatewayError {
  return new GatewayError('InvalidImage', `${path}: ${problem}`);
}

export function invalidUrl(path: string, problem: string): GatewayError {
  return new GatewayError('InvalidURL', `${path}: ${problem}`);
}

export function imageTooLarge(path: string, maxBytes: number, detail: string): GatewayError {
  return invalidImage(
    path,
    `image is larger than ${describeByteLimit(maxBytes)} (${maxBytes} bytes): ${detail}`,
  );
}
