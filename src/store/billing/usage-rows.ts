import type { Insertable, Selectable } from 'kysely';
import type { UsageRow } from '../../domain/usage-row.js';
import { DASHSCOPE_FRONT_DOOR } from '../../domain/front-door.js';
import type { UsageLedgerTable } from '../database/admission-schema.js';
import type { RecordedCode } from '../../errors/error-table.js';

const optionalMs = (ms: number | undefined) => (ms === undefined ? null : Math.round(ms));

export function toLedgerRow(row: UsageRow): Insertable<UsageLedgerTable> {
  return {
    id: row.id,
    request_id: row.requestId,
    token_id: row.tokenId ?? null,
    account: row.account,
    model: row.model ?? null,
    mode: row.mode ?? null,
    channel: row.channel ?? null,
    status: row.status,
    error_code: row.errorCode ?? null,
    images_requested: row.imagesRequested,
    images_reported: row.imagesReported ?? null,
    images_received: row.imagesReceived,
    images_delivered: row.imagesDelivered,
    images_billed: row.imagesBilled,
    output_size: row.outputSize ?? null,
    cost_micros: row.costMicros,
    gateway_ms: Math.round(row.gatewayMs),
    upstream_ms: optionalMs(row.upstreamMs),
    queue_ms: optionalMs(row.queueMs),
    storage_ms: optionalMs(row.storageMs),
    replayed: row.replayed ? 1 : 0,
    created_at: row.createdAt,
    workspace: row.workspace ?? null,
    front_door: row.frontDoor,
  };
}

/** A row with every field, from which the column list is read. */
const EVERY_FIELD: UsageRow = {
  id: '',
  requestId: '',
  tokenId: undefined,
  account: '',
  model: undefined,
  mode: undefined,
  channel: undefined,
  status: 0,
  errorCode: undefined,
  imagesRequested: 0,
  imagesReported: undefined,
  imagesReceived: 0,
  imagesDelivered: 0,
  imagesBilled: 0,
  outputSize: undefined,
  costMicros: 0,
  gatewayMs: 0,
  upstreamMs: undefined,
  queueMs: undefined,
  storageMs: undefined,
  replayed: false,
  createdAt: 0,
  workspace: undefined,
  frontDoor: '',
};

/**
 * The ledger's columns in the order `ledgerValues` gives their values: the keys `toLedgerRow`
 * writes, so a column added there reaches every statement that writes rows.
 */
export const LEDGER_COLUMNS: readonly string[] = Object.keys(toLedgerRow(EVERY_FIELD));

/** A row's values in the order of `LEDGER_COLUMNS`. */
export function ledgerValues(row: UsageRow): (string | number | null)[] {
  return Object.values(toLedgerRow(row));
}

export function fromLedgerRow(row: Selectable<UsageLedgerTable>): UsageRow {
  return {
    id: row.id,
    requestId: row.request_id,
    tokenId: row.token_id ?? undefined,
    account: row.account,
    model: row.model ?? undefined,
    mode: row.mode ?? undefined,
    channel: row.channel ?? undefined,
    status: Number(row.status),
    // Rows are only ever written from a RecordedCode.
    errorCode: (row.error_code ?? undefined) as RecordedCode | undefined,
    imagesRequested: Number(row.images_requested),
    imagesReported: row.images_reported === null ? undefined : Number(row.images_reported),
    imagesReceived: Number(row.images_received),
    imagesDelivered: Number(row.images_delivered),
    imagesBilled: Number(row.images_billed),
    outputSize: row.output_size ?? undefined,
    costMicros: Number(row.cost_micros),
    gatewayMs: Number(row.gateway_ms),
    upstreamMs: row.upstream_ms === null ? undefined : Number(row.upstream_ms),
    queueMs: row.queue_ms === null ? undefined : Number(row.queue_ms),
    storageMs: row.storage_ms === null ? undefined : Number(row.storage_ms),
    replayed: Number(row.replayed) === 1,
    createdAt: Number(row.created_at),
    workspace: row.workspace ?? undefined,
    frontDoor: row.front_door ?? DASHSCOPE_FRONT_DOOR,
  };
}
