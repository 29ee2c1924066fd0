import { randomUUID } from 'node:crypto';
import { MODEL_A } from '../../src/domain/models.js';
import type { UsageRow } from '../../src/domain/usage-row.js';

export const JAN_1 = Date.UTC(2025, 0, 1);
export const DAY = 86_400_000;

/** A billed ledger row of `images` model A images on 2025-01-01, with `overrides` applied. */
export function usageRow(images: number, overrides: Partial<UsageRow> = {}): UsageRow {
  return {
    id: randomUUID(),
    requestId: randomUUID(),
    tokenId: 'tok_a',
    account: 'acme',
    model: MODEL_A,
    mode: 'text-to-image',
    channel: 'local',
    status: 200,
    errorCode: undefined,
    imagesRequested: images,
    imagesReported: undefined,
    imagesReceived: images,
    imagesDelivered: images,
    imagesBilled: images,
    outputSize: '1024*1024',
    costMicros: images * 40_000,
    gatewayMs: 50,
    upstreamMs: 40,
    queueMs: undefined,
    storageMs: undefined,
    replayed: false,
    createdAt: JAN_1,
    workspace: undefined,
    frontDoor: 'dashscope',
    ...overrides,
  };
}
