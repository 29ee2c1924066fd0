import assert from 'node:assert/strict';
import type { ErrorCode } from '../../src/errors/error-table.js';
import { GatewayError } from '../../src/errors/gateway-error.js';

/** Asserts that `work` rejects with a GatewayError of `code` whose message is `path: <matching>`. */
export async function rejectsWith(
  work: Promise<unknown>,
  code: ErrorCode,
  path: string,
  message: RegExp,
): Promise<GatewayError> {
  let caught: unknown;
  try {
    await work;
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof GatewayError, `expected a GatewayError, got ${String(caught)}`);
  assert.equal(caught.code, code, caught.message);
  assert.ok(caught.message.startsWith(`${path}: `), caught.message);
  assert.match(caught.message.slice(path.length + 2), message);
  return caught;
}
