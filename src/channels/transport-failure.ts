import { type AttemptCall, type AttemptResult, failure } from './attempt-result.js';
import type { HttpFailure } from './upstream-exchange.js';

/**
 * What a failed exchange means for routing. Before the request was handed to the connection,
 * nothing reached the upstream and another channel may be tried; after it, the upstream may
 * have accepted the request, so it is never sent again.
 */
export function transportFailure(outcome: HttpFailure, call: AttemptCall): AttemptResult {
  const mayHaveBeenAccepted = outcome.requestSent;
  const afterSending = mayHaveBeenAccepted ? ' after the request was sent' : '';
  if (outcome.aborted) {
    if (call.callerGone())
      return failure('caller-gone', `caller disconnected${afterSending}`, { mayHaveBeenAccepted });
    return failure('timeout', `timed out${afterSending}`, { mayHaveBeenAccepted });
  }
  if (mayHaveBeenAccepted)
    return failure('dropped', `${outcome.detail}${afterSending}`, { mayHaveBeenAccepted });
  return failure('unreachable', outcome.detail);
}
