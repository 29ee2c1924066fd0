/**
 * What a request's ledger row says whatever its outcome: which row, which request, who made it,
 * through which front door, when. Known before the request runs, and never changed by it.
 */
export interface RowLabels {
  /** One id per request, so that every write of its row, or of a stand-in for it, is the same row. */
  rowId: string;
  requestId: string;
  /** When the request arrived, milliseconds since the epoch. */
  receivedAt: number;
  tokenId: string | undefined;
  account: string;
  /** The protocol the request came in by (domain/front-door.ts). */
  frontDoor: string;
  /** The DashScope workspace the caller named, if any. */
  workspace: string | undefined;
}
