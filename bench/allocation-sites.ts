// Where a gateway's bytes are allocated: sums a sampled heap profile kept by the allocations bench
// (ALLOCATION_PROBE_KEEP) by function and by file, largest first.
//   ALLOCATION_PROBE_KEEP=/tmp/heap npm run bench -- allocations
//   npx tsx bench/allocation-sites.ts /tmp/heap/heap-1.heapprofile [requests] [top]
// `requests` (the window's, 2,000 by default) turns bytes into bytes per request.
import { readFile } from 'node:fs/promises';

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

const [file, requestsText = '2000', topText = '25'] = process.argv.slice(2);
if (file === undefined) {
  process.stderr.write('usage: allocation-sites.ts FILE.heapprofile [requests] [top]\n');
  process.exit(2);
}
const requests = Number(requestsText);
const top = Number(topText);
const profile = JSON.parse(await readFile(file, 'utf8')) as { head: ProfileNode };

const byFunction = new Map<string, number>();
const byFile = new Map<string, number>();
const add = (totals: Map<string, number>, key: string, bytes: number) =>
  totals.set(key, (totals.get(key) ?? 0) + bytes);

/** Where a frame's code lives, shortened to the package or the project's own path. */
function place(url: string): string {
  if (url === '') return '(V8 or native)';
  const modules = url.lastIndexOf('node_modules/');
  if (modules >= 0) return url.slice(modules + 'node_modules/'.length);
  const dist = url.indexOf('/dist/');
  return dist >= 0 ? url.slice(dist + 1) : url.replace(/^file:\/\//, '');
}

const stack: ProfileNode[] = [profile.head];
let total = 0;
for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
  stack.push(...node.children);
  if (node.selfSize === 0) continue;
  total += node.selfSize;
  const where = place(node.callFrame.url);
  add(
    byFunction,
    `${node.callFrame.functionName || '(anonymous)'} ${where}:${node.callFrame.lineNumber + 1}`,
    node.selfSize,
  );
  add(byFile, where.replace(/:\d+$/, ''), node.selfSize);
}

const kb = (bytes: number) => (bytes / requests / 1024).toFixed(2);
function table(title: string, totals: Map<string, number>): string {
  const lines = [...totals]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([key, bytes]) => `${kb(bytes).padStart(7)}  ${key}`);
  return `\n${title} (KB per request, of ${kb(total)})\n${lines.join('\n')}\n`;
}
// A reader that stops early (| head) is no error of ours.
process.stdout.on('error', () => undefined);
process.stdout.write(table('by file', byFile) + table('by function', byFunction));
