// Loaded into a gateway under the allocations bench (`node --import` this file): counts what the
// gateway makes while the bench sends requests, in windows the bench opens and closes with
// SIGUSR2. The kind of each window comes from ALLOCATION_PROBE_WINDOWS, e.g. "async,heap":
//   async  the asynchronous resources created (promises, ticks, timers, immediates), by type, as
//          async_hooks reports their creation;
//   heap   the bytes allocated, collected or not, sampled by V8's heap profiler.
// The two are kept apart because enabling async_hooks changes how V8 runs promises. At the end of
// each window one JSON line goes to ALLOCATION_PROBE_OUT. With ALLOCATION_PROBE_KEEP=directory, a
// heap window's sampled profile is kept there too (heap-<window>.heapprofile: Chromium's DevTools
// open it, and bench/allocation-sites.ts sums it by function and by file).
import { createHook } from 'node:async_hooks';
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Session } from 'node:inspector';

/** Bytes between two samples: small enough that a few thousand requests give a steady figure. */
const SAMPLING_INTERVAL_BYTES = 4096;

const windows = (process.env.ALLOCATION_PROBE_WINDOWS ?? '').split(',').filter(Boolean);
const out = process.env.ALLOCATION_PROBE_OUT;
const keep = process.env.ALLOCATION_PROBE_KEEP;
// Made here: a profile written into a missing directory would throw inside the window's close,
// and the bench would only see a window that never closed.
if (keep !== undefined) mkdirSync(keep, { recursive: true });
const counts = new Map();
const hook = createHook({
  init(_id, type) {
    counts.set(type, (counts.get(type) ?? 0) + 1);
  },
});
const session = new Session();
session.connect();

let index = 0;
let open = false;

/** One JSON line per event: the window opened (counting from now on), or its figures. */
function write(line) {
  if (out !== undefined) appendFileSync(out, `${JSON.stringify({ window: index, ...line })}\n`);
}

function report(line) {
  write(line);
  index += 1;
}

function totalBytes(node) {
  return node.children.reduce((sum, child) => sum + totalBytes(child), node.selfSize);
}

process.on('SIGUSR2', () => {
  const kind = windows[index];
  if (kind === undefined) return;
  if (!open) {
    open = true;
    if (kind === 'async') {
      counts.clear();
      hook.enable();
      write({ kind, opened: true });
    } else {
      session.post('HeapProfiler.enable', () =>
        session.post(
          'HeapProfiler.startSampling',
          {
            samplingInterval: SAMPLING_INTERVAL_BYTES,
            includeObjectsCollectedByMajorGC: true,
            includeObjectsCollectedByMinorGC: true,
          },
          () => write({ kind, opened: true }),
        ),
      );
    }
    return;
  }
  open = false;
  if (kind === 'async') {
    hook.disable();
    report({ kind, counts: Object.fromEntries(counts) });
  } else {
    session.post('HeapProfiler.stopSampling', (error, result) => {
      if (error === null && keep !== undefined)
        writeFileSync(path.join(keep, `heap-${index}.heapprofile`), JSON.stringify(result.profile));
      report(
        error === null
          ? { kind, bytes: totalBytes(result.profile.head) }
          : { kind, error: String(error) },
      );
    });
  }
});
