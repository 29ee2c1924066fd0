import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type GatewayEvent, readEvents } from '../../src/client/sse-reader.js';

function bodyOf(chunks: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
      controller.close();
    },
  });
}

async function eventsOf(chunks: string[]): Promise<GatewayEvent[]> {
  const events: GatewayEvent[] = [];
  for await (const event of readEvents(bodyOf(chunks))) events.push(event);
  return events;
}

describe('readEvents: the gateway framing of docs/api.md §10.2', () => {
  it('reads events split anywhere across chunks, skipping comments and keep-alives', async () => {
    const stream =
      ':keep-alive\n\nid:1\nevent:result\n:HTTP_STATUS/200\ndata:{"output":{"n":1}}\n\n' +
      'id:2\r\nevent:result\r\ndata:{"usage":{"image_count":1}}\r\n\r\n';
    const chunks = [
      stream.slice(0, 7),
      stream.slice(7, 50),
      stream.slice(50, 51),
      stream.slice(51),
    ];
    assert.deepEqual(await eventsOf(chunks), [
      { event: 'result', status: undefined, data: { output: { n: 1 } } },
      { event: 'result', status: undefined, data: { usage: { image_count: 1 } } },
    ]);
  });

  it("reads an error event's status line", async () => {
    const events = await eventsOf([
      'id:1\nevent:error\n:HTTP_STATUS/502\nstatus:502\ndata:{"code":"UpstreamError"}\n\n',
    ]);
    assert.deepEqual(events, [{ event: 'error', status: 502, data: { code: 'UpstreamError' } }]);
  });

  it('gives a last event the stream closed without its blank line', async () => {
    assert.deepEqual(await eventsOf(['event:result\ndata:{"a":1}']), [
      { event: 'result', status: undefined, data: { a: 1 } },
    ]);
  });
});
