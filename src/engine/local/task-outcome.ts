import type { ErrorCode } from '../../errors/error-table.js';
import { GatewayError } from '../../errors/gateway-error.js';

/** A GatewayError as plain data. */
export interface GatewayErrorData {
  code: ErrorCode;
  message: string;
  headers: Record<string, string>;
}

/**
 * A worker task's answer. A thrown error loses its class and its `code` when it crosses threads,
 * so the caller's errors (an undecodable input is InvalidImage, a 400) travel as data instead.
 */
export type TaskOutcome<T> = { ok: true; value: T } | { ok: false; error: GatewayErrorData };

/** Worker side: runs `work`, turning a GatewayError into data; any other error is a bug and is thrown. */
export async function settle<T>(work: () => Promise<T>): Promise<TaskOutcome<T>> {
  try {
    return { ok: true, value: await work() };
  } catch (error) {
    if (!(error instanceof GatewayError)) throw error;
    return {
      ok: false,
      error: { code: error.code, message: error.message, headers: { ...error.headers } },
    };
  }
}

/** Main side: the task's value, or the GatewayError it ended with, rebuilt. */
export function unwrap<T>(outcome: TaskOutcome<T>): T {
  if (outcome.ok) return outcome.value;
  const { code, message, headers } = outcome.error;
  throw new GatewayError(code, message, headers);
}
