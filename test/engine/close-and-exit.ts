// Run as a child process by local-engine-threads.test.ts: renders once through the gateway's
// router (and so through its shared LocalEngine), closes the router, and must then exit on its
// own. Prints one JSON line with what it saw.
import { existsSync, readFileSync } from 'node:fs';
import { createRouter } from '../../src/channels/create-router.js';
import { DEFAULT_LOCAL_CHANNEL } from '../../src/config/channel-config.js';
import type { ResultStore } from '../../src/storage/result-store.js';
import { body, jobFor, MODEL_A } from './engine-fixtures.js';
import { outputOf } from '../../src/engine/engine-run.js';

/** OS threads of this process (Linux), to see the render workers go; undefined elsewhere. */
function threadCount(): number | undefined {
  if (!existsSync('/proc/self/status')) return undefined;
  const match = /^Threads:\s+(\d+)/m.exec(readFileSync('/proc/self/status', 'utf8'));
  return match?.[1] === undefined ? undefined : Number(match[1]);
}

const unusedResults: ResultStore = {
  save: () => Promise.reject(new Error('a local channel stores nothing')),
};

const router = createRouter(
  { channels: [DEFAULT_LOCAL_CHANNEL], routingDeadlineMs: 60_000 },
  { results: unusedResults },
);
const output = await outputOf(
  router.generate(jobFor(body(MODEL_A, 'a lighthouse', { size: '1K' }))),
);
const threadsWhileOpen = threadCount();
await router.close();
const threadsAfterClose = threadCount();
process.stdout.write(
  `${JSON.stringify({ images: output.images.length, threadsWhileOpen, threadsAfterClose })}\n`,
);
