import { GatewayError } from '../errors/gateway-error.js';
import { isDatabaseUnavailable } from '../store/database/database-unavailable.js';
import type { Log } from '../support/log.js';

/**
 * The error a task ends FAILED with: the GatewayError a synchronous call would have been answered
 * with, so a task's output.code and output.message are the ones the same request gets in sync.
 */
export function taskFailureOf(error: unknown, taskId: string, log: Log): GatewayError {
  if (error instanceof GatewayError) {
    if (error.status >= 500)
      log.warn({ task_id: taskId, code: error.code, message: error.message }, 'task failed');
    return error;
  }
  if (isDatabaseUnavailable(error)) {
    log.warn({ task_id: taskId, err: String(error) }, 'task failed: database unavailable');
    return new GatewayError(
      'Overloaded',
      "the gateway's database is unavailable or slow; nothing was billed, submit the task again",
    );
  }
  log.error({ task_id: taskId, err: String(error) }, 'task failed unexpectedly');
  return new GatewayError(
    'InternalError',
    'an internal error occurred; quote the task_id when reporting it',
  );
}

/** A task ended by a node other than its runner, after the runner's lease lapsed. */
export function runnerLost(): GatewayError {
  return new GatewayError(
    'InternalError',
    'the gateway node running this task stopped before it finished; nothing was billed, submit it again',
  );
}

/** A task still running when its node's shutdown budget ran out. */
export function shutDownMidTask(): GatewayError {
  return new GatewayError(
    'InternalError',
    'the gateway node running this task shut down before it finished; nothing was billed, submit it again',
  );
}

/**
 * A task whose token was revoked or expired (or deleted) before a runner claimed it: the reason
 * the token check gave, said as the task's own failure. Other errors pass unchanged.
 */
export function tokenStandingLost(error: unknown): unknown {
  if (!(error instanceof GatewayError) || error.code !== 'InvalidApiKey') return error;
  return new GatewayError(
    'InvalidApiKey',
    `the token this task was submitted with was revoked or has expired before the task ran (${error.message}); nothing was billed`,
  );
}

/**
 * A task stored by a node that stopped before the answer carrying its id reached the caller (or
 * before it could say so): canceled, as nobody may know its id.
 */
export function unannounced(): { code: 'CallerGone'; message: string } {
  return {
    code: 'CallerGone',
    message:
      'the gateway node that stored this task stopped before it could confirm that the task id reached the caller; nothing was billed, submit it again',
  };
}

/**
 * The runner no longer holds its task: another node ended it after the runner's lease lapsed (a
 * stalled process). Not a failure of the task, which already has its ending and its row.
 */
export class TaskClaimLost extends Error {
  constructor(taskId: string) {
    super(`task ${taskId} is no longer this runner's (ended elsewhere): not run further`);
    this.name = 'TaskClaimLost';
  }
}
