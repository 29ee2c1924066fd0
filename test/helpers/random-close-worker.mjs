// The callers of test/helpers/random-close.ts, on a thread of their own: a caller's hang-up comes
// at its own moment, not at the end of a turn of the gateway's event loop, and what reached its
// socket before is read then, as a caller in another process would read it.
import { request as httpRequest } from 'node:http';
import { clearTimeout, setImmediate, setTimeout } from 'node:timers';
import { parentPort } from 'node:worker_threads';

/** Complete image events of an incremental stream: an event counts once its blank line came. */
function imageEventsIn(text) {
  const events = text.split('\n\n').slice(0, -1);
  return events.filter(
    (event) => event.includes('event:result') && event.includes('"finished":false'),
  ).length;
}

function streamAndClose({ url, headers, body, requestId, plan }) {
  return new Promise((resolve) => {
    let text = '';
    let bytes = 0;
    let timer;
    let settled = false;
    const request = httpRequest(url, {
      method: 'POST',
      agent: false,
      headers: { 'content-type': 'application/json', 'x-request-id': requestId, ...headers },
    });
    const finish = (completed) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      request.destroy();
      resolve({ requestId, imagesParsed: imageEventsIn(text), completed, bytes, plan });
    };
    let hungUp = false;
    // Destroyed: once what has reached the socket is read (the poll phase comes before the check
    // phase of setImmediate), the connection is destroyed, and whatever arrives later is lost.
    // Half-closed: it is read until the gateway closes its side, so every byte handed over counts.
    const hangUp = () => {
      if (hungUp) return;
      hungUp = true;
      if (plan.how === 'destroy') setImmediate(() => finish(false));
      else request.socket?.end();
    };
    const done = (completed) => finish(completed && !hungUp);
    request.on('error', () => done(false));
    request.on('close', () => done(false));
    request.on('response', (response) => {
      response.setEncoding('utf8');
      response.on('data', (chunk) => {
        text += chunk;
        bytes += Buffer.byteLength(chunk);
        if (plan.kind === 'bytes' && bytes >= plan.count) hangUp();
      });
      response.on('end', () => done(true));
      response.on('error', () => done(false));
      response.on('close', () => done(false));
    });
    if (plan.kind === 'delay') timer = setTimeout(hangUp, plan.ms);
    request.end(JSON.stringify(body));
  });
}

parentPort.on('message', async ({ id, call }) => {
  parentPort.postMessage({ id, stream: await streamAndClose(call) });
});
