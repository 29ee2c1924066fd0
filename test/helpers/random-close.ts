import { request as httpRequest } from 'node:http';
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

/** When a caller hangs up: a time after sending its request, or once it has this many bytes. */
export type ClosePlan = { kind: 'delay'; ms: number } | { kind: 'bytes'; count: number };

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

/**
 * Complete image events of an incremental stream (`"finished":false`) in the text received: an
 * event counts once the blank line that ends it has arrived.
 */
export function imageEventsIn(text: string): number {
  const events = text.split('\n\n').slice(0, -1);
  return events.filter(
    (event) => event.includes('event:result') && event.includes('"finished":false'),
  ).length;
}

/**
 * POSTs an event-stream request on a connection of its own and destroys that connection as the
 * plan says, counting the image events it had received by then.
 */
export function streamAndClose(
  url: string,
  headers: Record<string, string>,
  body: unknown,
  requestId: string,
  plan: ClosePlan,
): Promise<ClosedStream> {
  return new Promise((resolve) => {
    let text = '';
    let bytes = 0;
    let timer: NodeJS.Timeout | undefined;
    const request = httpRequest(url, {
      method: 'POST',
      agent: false,
      headers: { 'content-type': 'application/json', 'x-request-id': requestId, ...headers },
    });
    const done = (completed: boolean) => {
      clearTimeout(timer);
      if (!completed) request.destroy();
      resolve({ requestId, imagesParsed: imageEventsIn(text), completed, bytes, plan });
    };
    request.on('error', () => done(false));
    request.on('response', (response) => {
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        text += chunk;
        bytes += Buffer.byteLength(chunk);
        if (plan.kind === 'bytes' && bytes >= plan.count) done(false);
      });
      response.on('end', () => done(true));
      response.on('error', () => done(false));
    });
    if (plan.kind === 'delay') timer = setTimeout(() => done(false), plan.ms);
    request.end(JSON.stringify(body));
  });
}

/** A plan drawn at random: half by time within `durationMs`, half by bytes within `totalBytes`. */
export function randomPlan(durationMs: number, totalBytes: number): ClosePlan {
  return Math.random() < 0.5
    ? { kind: 'delay', ms: Math.random() * durationMs }
    : { kind: 'bytes', count: 1 + Math.floor(Math.random() * totalBytes) };
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
