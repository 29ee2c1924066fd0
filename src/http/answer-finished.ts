import type { ServerResponse } from 'node:http';

/** Whether each watched answer was handed whole to its connection: its `finish` came. */
const finishes = new WeakMap<ServerResponse, boolean>();

/** Watches for the answer's `finish` from now on; call it before the answer can be sent. */
export function watchFinish(response: ServerResponse): void {
  if (finishes.has(response)) return;
  finishes.set(response, false);
  response.once('finish', () => finishes.set(response, true));
}

/**
 * Whether every byte of the answer was handed to its connection (the response's `finish`). Not
 * `writableFinished`, which also reads true once the socket that took the answer was destroyed
 * before confirming the write: then no `finish` comes, and neither does Fastify's `onResponse`,
 * so the answer's end is the connection's `close`, and the caller may not have it. An answer
 * never watched falls back to `writableFinished`.
 */
export function answerFinished(response: ServerResponse): boolean {
  return finishes.get(response) ?? response.writableFinished;
}
