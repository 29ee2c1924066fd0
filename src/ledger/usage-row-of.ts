import { STAND_IN_STATUS, type UsageRow } from '../domain/usage-row.js';
import type { RecordedCode } from '../errors/error-table.js';
import type { GenerationOutcome } from './generation-outcome.js';
import type { RowLabels } from './row-labels.js';

/** How a request ended, as its row records it. */
export interface RowEnding {
  status: number;
  code: RecordedCode | undefined;
  /** Milliseconds since the epoch. */
  endedAt: number;
}

/** The one way a ledger row is made: a request's labels, what it came to, and how it ended. */
export function usageRowOf(
  labels: RowLabels,
  outcome: GenerationOutcome,
  ending: RowEnding,
): UsageRow {
  return {
    id: labels.rowId,
    requestId: labels.requestId,
    tokenId: labels.tokenId,
    account: labels.account,
    model: outcome.description?.model,
    mode: outcome.description?.mode,
    channel: outcome.channel,
    status: ending.status,
    errorCode: ending.code,
    imagesRequested: outcome.description?.imagesRequested ?? 0,
    imagesReported: outcome.imagesReported,
    imagesReceived: outcome.imagesReceived,
    imagesDelivered: outcome.imagesDelivered,
    imagesBilled: outcome.imagesBilled,
    outputSize: outcome.outputSize,
    costMicros: outcome.costMicros,
    gatewayMs: Math.max(0, ending.endedAt - labels.receivedAt),
    upstreamMs: outcome.upstreamMs,
    queueMs: outcome.queueMs,
    storageMs: outcome.storageMs,
    replayed: outcome.replayed === true,
    createdAt: labels.receivedAt,
    workspace: labels.workspace,
    frontDoor: labels.frontDoor,
  };
}

/**
 * The row a request leaves before it ends, replaced by its own row when it does: it stays only for
 * a request lost with its node (`Abandoned`, or what it had billed image by image by then).
 */
export function standInRowOf(labels: RowLabels, outcome: GenerationOutcome): UsageRow {
  return usageRowOf(labels, outcome, {
    status: STAND_IN_STATUS,
    code: 'Abandoned',
    endedAt: labels.receivedAt,
  });
}
