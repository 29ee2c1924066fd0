import { GatewayTransportError } from './answer-error.js';

/** One Server-Sent Event as the gateway frames it (docs/api.md §10.2). */
export interface GatewayEvent {
  event: string;
  /** The `status:` line of an error event, when present. */
  status?: number;
  data: unknown;
}

interface EventLines {
  event: string;
  status?: number;
  data: string[];
}

/** Reads the events of a `text/event-stream` body, in order; comments (keep-alive) are skipped. */
export async function* readEvents(
  body: ReadableStream<Uint8Array>,
): AsyncGenerator<GatewayEvent, void, undefined> {
  const decoder = new TextDecoder();
  let pending = '';
  let current: EventLines = { event: 'message', data: [] };
  for await (const chunk of body) {
    pending += decoder.decode(chunk, { stream: true });
    let newline: number;
    while ((newline = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, newline).replace(/\r$/, '');
      pending = pending.slice(newline + 1);
      if (line !== '') {
        addLine(current, line);
        continue;
      }
      if (current.data.length > 0) yield parsed(current);
      current = { event: 'message', data: [] };
    }
  }
  // A stream closed without the blank line after its last event still delivered that event.
  if (pending !== '') addLine(current, pending.replace(/\r$/, ''));
  if (current.data.length > 0) yield parsed(current);
}

function addLine(current: EventLines, line: string): void {
  if (line.startsWith(':')) return;
  const colon = line.indexOf(':');
  const field = colon < 0 ? line : line.slice(0, colon);
  const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
  if (field === 'event') current.event = value;
  else if (field === 'status') current.status = Number(value);
  else if (field === 'data') current.data.push(value);
}

function parsed(event: EventLines): GatewayEvent {
  try {
    return { event: event.event, status: event.status, data: JSON.parse(event.data.join('\n')) };
  } catch {
    throw new GatewayTransportError('the gateway sent an event whose data is not JSON');
  }
}
