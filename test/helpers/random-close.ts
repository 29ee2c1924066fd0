import { Worker } from 'node:worker_threads';
import { MODEL_A } from '../../src/domain/models.js';
import type { UsageRow } from '../../src/domain/usage-row.js';

/** A model A request whose 4 images are streamed one by one as each is ready. */
export const INCREMENTAL_BODY = {
  model: MODEL_A,
  input: { messages: [{ role: 'user', content: [{ text: 'a lighthouse at dusk' }] }] },
  parameters: { n: 4, enable_sequential: true, incremental_output: true, size: '1024*1024' },
};

/** The headers the DashScope SDK sends for an event stream. */
export const STREAM_HEADERS = { accept: 'text/event-stream', 'x-dashscope-sse': 'enable' };

/**
 * When a caller hangs up (a time after sending its request, or once it has this many bytes), and
 * how: destroying its connection once it has read what already reached its socket, or closing
 * its side and reading what was sent until the gateway closes too.
 */
export type ClosePlan = ({ kind: 'delay'; ms: number } | { kind: 'bytes'; count: number }) & {
  how: 'destroy' | 'half-close';
};

/** What one caller of an incremental stream saw before it hung up (or the stream ended). */
export interface ClosedStream {
  requestId: string;
  /** Complete image events in everything the caller received. */
  imagesParsed: number;
  /** The stream ended before the caller hung up. */
  completed: boolean;
  /** Bytes of the answer received, headers excluded. */
  bytes: number;
  plan: ClosePlan;
}

/** What the ledger says of one such stream, next to what its caller saw. */
export interface CloseCheck {
  stream: ClosedStream;
  row: UsageRow | undefined;
}

/** One stream to post and hang up on. */
export interface CloseCall {
  url: string;
  headers: Record<string, string>;
  body: unknown;
  requestId: string;
  plan: ClosePlan;
}

/**
 * Callers that POST an event-stream request each on a connection of its own, destroy it as its
 * plan says, and count the image events received by then; they run on a thread of their own
 * (random-close-worker.mjs).
 */
export class ClosingCallers {
  private readonly worker = new Worker(new URL('./random-close-worker.mjs', import.meta.url));
  private readonly waiting = new Map<number, (stream: ClosedStream) => void>();
  private nextId = 0;

  constructor() {
    this.worker.on('message', ({ id, stream }: { id: number; stream: ClosedStream }) => {
      this.waiting.get(id)?.(stream);
      this.waiting.delete(id);
    });
  }

  call(call: CloseCall): Promise<ClosedStream> {
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.worker.postMessage({ id, call });
    });
  }

  async close(): Promise<void> {
    await this.worker.terminate();
  }
}

/**
 * A plan drawn at random: half by time within `durationMs`, half by bytes within `totalBytes`;
 * half destroying the connection, half closing one side.
 */
export function randomPlan(durationMs: number, totalBytes: number): ClosePlan {
  const how = Math.random() < 0.5 ? 'destroy' : 'half-close';
  return Math.random() < 0.5
    ? { kind: 'delay', ms: Math.random() * durationMs, how }
    : { kind: 'bytes', count: 1 + Math.floor(Math.random() * totalBytes), how };
}

/** Runs `runs` streams, `atOnce` at a time. */
export async function closeMany(
  runs: number,
  atOnce: number,
  run: (index: number) => Promise<ClosedStream>,
): Promise<ClosedStream[]> {
  const results: ClosedStream[] = [];
  let next = 0;
  const worker = async () => {
    while (next < runs) results.push(await run(next++));
  };
  await Promise.all(Array.from({ length: atOnce }, worker));
  return results;
}

/** The checks that fail: billed differs from what the caller parsed, or the row is inconsistent. */
export function disagreements(checks: readonly CloseCheck[]): {
  overBilled: CloseCheck[];
  underBilled: CloseCheck[];
  badRows: CloseCheck[];
} {
  const billed = (check: CloseCheck) => check.row?.imagesBilled ?? -1;
  return {
    overBilled: checks.filter((check) => billed(check) > check.stream.imagesParsed),
    underBilled: checks.filter(
      (check) => check.row !== undefined && billed(check) < check.stream.imagesParsed,
    ),
    badRows: checks.filter(
      ({ row, stream }) => !rowAgrees(row, stream) && !neverArrived(row, stream),
    ),
  };
}

/**
 * A caller who hung up before anything came back may have done so before the gateway read its
 * request: then there is no request, and no row.
 */
export function neverArrived(row: UsageRow | undefined, stream: ClosedStream): boolean {
  return row === undefined && stream.bytes === 0 && !stream.completed;
}

/**
 * A stream read to its end is 200; one its caller left is 499 CallerGone (or 200 when it left
 * after the last event was handed over); either way received >= delivered = billed.
 */
function rowAgrees(row: UsageRow | undefined, stream: ClosedStream): boolean {
  if (row === undefined) return false;
  const statusAgrees = stream.completed
    ? row.status === 200 && row.errorCode === undefined
    : (row.status === 499 && row.errorCode === 'CallerGone') ||
      (row.status === 200 && row.errorCode === undefined);
  return (
    statusAgrees &&
    row.imagesReceived >= row.imagesDelivered &&
    row.imagesDelivered === row.imagesBilled
  );
}
