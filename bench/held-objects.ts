// What a request in flight holds on the heap: the difference between two heap snapshots of one
// process, the first taken idle and the second with REQUESTS requests waiting at a slow upstream,
// by kind of object (constructor or V8's own kind), largest first. A snapshot counts only what is
// reachable, after a full collection: what each request keeps, which every scavenge copies
// while it waits.
//   node --heapsnapshot-signal=SIGUSR2 --diagnostic-dir=/tmp/snapshots dist/main.js  (or a proxy)
//   kill -USR2 <pid>   # idle, after a warm-up
//   ... hold REQUESTS requests at an upstream that does not answer yet, then kill -USR2 again
//   npx tsx bench/held-objects.ts IDLE.heapsnapshot BUSY.heapsnapshot REQUESTS [top]
import { readFile } from 'node:fs/promises';

interface HeapSnapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

/** Kinds whose names are their contents (each string, each number): counted as one kind each. */
const NAMELESS_KINDS = new Set([
  'string',
  'concatenated string',
  'sliced string',
  'number',
  'code',
]);

interface Held {
  count: number;
  bytes: number;
}

async function heldByKind(file: string): Promise<{ kinds: Map<string, Held>; bytes: number }> {
  const snapshot = JSON.parse(await readFile(file, 'utf8')) as HeapSnapshot;
  const fields = snapshot.snapshot.meta.node_fields;
  const types = snapshot.snapshot.meta.node_types[0];
  const width = fields.length;
  const typeAt = fields.indexOf('type');
  const nameAt = fields.indexOf('name');
  const sizeAt = fields.indexOf('self_size');
  const kinds = new Map<string, Held>();
  let bytes = 0;
  const { nodes, strings } = snapshot;
  for (let at = 0; at < nodes.length; at += width) {
    const type = types[nodes[at + typeAt] as number] as string;
    const name = NAMELESS_KINDS.has(type) ? '' : (strings[nodes[at + nameAt] as number] as string);
    const kind = `${type}${name === '' ? '' : `: ${name.slice(0, 60)}`}`;
    const size = nodes[at + sizeAt] as number;
    const held = kinds.get(kind) ?? { count: 0, bytes: 0 };
    held.count += 1;
    held.bytes += size;
    kinds.set(kind, held);
    bytes += size;
  }
  return { kinds, bytes };
}

const [idleFile, busyFile, requestsText, topText = '30'] = process.argv.slice(2);
if (idleFile === undefined || busyFile === undefined || requestsText === undefined) {
  process.stderr.write(
    'usage: held-objects.ts IDLE.heapsnapshot BUSY.heapsnapshot REQUESTS [top]\n',
  );
  process.exit(2);
}
const requests = Number(requestsText);
const idle = await heldByKind(idleFile);
const busy = await heldByKind(busyFile);
const rows = [...busy.kinds].map(([kind, held]) => {
  const before = idle.kinds.get(kind) ?? { count: 0, bytes: 0 };
  return {
    kind,
    objects: (held.count - before.count) / requests,
    bytes: (held.bytes - before.bytes) / requests,
  };
});
rows.sort((a, b) => b.bytes - a.bytes);
process.stdout.write(
  `held per request in flight: ${((busy.bytes - idle.bytes) / requests / 1024).toFixed(1)} KiB\n` +
    `${'bytes'.padStart(7)} ${'objects'.padStart(8)}  kind\n`,
);
for (const row of rows.slice(0, Number(topText)))
  process.stdout.write(
    `${row.bytes.toFixed(0).padStart(7)} ${row.objects.toFixed(2).padStart(8)}  ${row.kind}\n`,
  );
