// The callers of test/tasks/leaving-caller.ts, on a thread of their own: a caller's hang-up comes
// at its own moment, not at the end of a turn of the gateway's event loop, and what reached its
// socket before is read then, as a caller in another process would read it.
import { connect } from 'node:net';
import { setImmediate, setTimeout } from 'node:timers';
import { parentPort } from 'node:worker_threads';

const sockets = new Map();

function parseAnswer(text) {
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
  const split = text.indexOf('\r\n\r\n');
  const length = Number(/\r\ncontent-length: (\d+)/i.exec(text)?.[1] ?? -1);
  const body = split < 0 ? '' : text.slice(split + 4);
  if (length < 0 || Buffer.byteLength(body) < length) return { status, taskId: undefined };
  const taskId = JSON.parse(body).output?.task_id;
  return { status, taskId: typeof taskId === 'string' ? taskId : undefined };
}

function submit({ id, port, request, leaveAfterHeaders, leaveAfterMs }) {
  const socket = connect(port, '127.0.0.1');
  let text = '';
  let left = false;
  // Destroyed once what has reached the socket is read: the poll phase comes before the check
  // phase of setImmediate; whatever arrives later is lost.
  const leave = () => {
    if (left || socket.destroyed) return;
    left = true;
    setImmediate(() => socket.destroy());
  };
  sockets.set(id, leave);
  socket.setEncoding('utf8');
  socket.on('error', () => undefined);
  socket.on('data', (chunk) => {
    text += chunk;
    if (leaveAfterHeaders && text.includes('\r\n\r\n')) leave();
  });
  socket.once('close', () => {
    sockets.delete(id);
    parentPort.postMessage({ id, seen: { ...parseAnswer(text), left } });
  });
  if (leaveAfterMs !== undefined) setTimeout(leave, leaveAfterMs);
  socket.write(request);
}

parentPort.on('message', (message) => {
  if (message.leave !== undefined) sockets.get(message.leave)?.();
  else submit(message);
});
