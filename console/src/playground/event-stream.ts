/** One Server-Sent Event as the gateway frames it (docs/api.md §10.2). */
export interface StreamEvent {
  event: string;
  data: string;
}

/**
 * Reads a text/event-stream body event by event, as each arrives: `onEvent` runs once per event,
 * before the next chunk is read. Comment lines (`:keep-alive`, `:HTTP_STATUS/200`) are skipped.
 */
export async function readEventStream(
  body: ReadableStream<Uint8Array>,
  onEvent: (event: StreamEvent) => void,
): Promise<void> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffered = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buffered += decoder.decode(value, { stream: true });
    let end = buffered.indexOf('\n\n');
    while (end !== -1) {
      const frame = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      const event = parseFrame(frame);
      if (event !== undefined) onEvent(event);
      end = buffered.indexOf('\n\n');
    }
  }
}

function parseFrame(frame: string): StreamEvent | undefined {
  let event = 'message';
  const data: string[] = [];
  for (const line of frame.split('\n')) {
    if (line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  }
  return data.length === 0 ? undefined : { event, data: data.join('\n') };
}
