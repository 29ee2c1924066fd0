import { GatewayError } from '../errors/gateway-error.js';
import { describeByteLimit } from './image-limits.js';
import { echo } from '../errors/echo.js';

export function invalidImage(path: string, problem: string): GatewayError {
  return new GatewayError('InvalidImage', `${echo(path)}: ${problem}`);
}

export function invalidUrl(path: string, problem: string): GatewayError {
  return new GatewayError('InvalidURL', `${echo(path)}: ${problem}`);
}

export function imageTooLarge(path: string, maxBytes: number, detail: string): GatewayError {
  return invalidImage(
    path,
    `image is larger than ${describeByteLimit(maxBytes)} (${maxBytes} bytes): ${detail}`,
  );
}
