import { randomUUID } from 'node:crypto';
import type { UsageRow } from '../../src/domain/usage-row.js';
import { emptyOutcome } from '../../src/ledger/generation-outcome.js';
import type { RowLabels } from '../../src/ledger/row-labels.js';
import { usageRowOf } from '../../src/ledger/usage-row-of.js';
import { timeOrderedUuid } from '../../src/support/time-ordered-id.js';

/** The row labels of a request `requestId` made now by token `tok_a`, through the DashScope door. */
export function rowLabelsFor(requestId: string, tokenId: string | undefined = 'tok_a'): RowLabels {
  return {
    rowId: `row-${requestId}`,
    requestId,
    receivedAt: Date.now(),
    tokenId,
    account: 'acct',
    frontDoor: 'dashscope',
    workspace: undefined,
  };
}

/**
 * The ledger row of a request of `tokenId`'s account `acme` that delivered and billed `images`
 * (received `received` of them), without prices.
 */
export function billedRow(
  tokenId: string | undefined,
  images: number,
  received: number = images,
): UsageRow {
  return usageRowOf(
    { ...rowLabelsFor(randomUUID(), tokenId), rowId: timeOrderedUuid(), account: 'acme' },
    Object.assign(emptyOutcome(undefined), {
      imagesReceived: received,
      imagesDelivered: images,
      imagesBilled: images,
    }),
    { status: 200, code: undefined, endedAt: Date.now() },
  );
}
