// A test reporter that prints nothing until the run ends, then lists every failed test with its
// file and error: a CI log that keeps only its tail still names what failed.
import path from 'node:path';

export default async function* failureSummary(source) {
  const failures = [];
  for await (const event of source) {
    if (event.type !== 'test:fail') continue;
    const { name, file, line, details } = event.data;
    // A suite fails when a test inside it does; the test itself is the one worth naming.
    if (details?.error?.failureType === 'subtestsFailed') continue;
    const cause = details?.error?.cause ?? details?.error;
    const message = String(cause?.message ?? cause ?? 'failed')
      .split('\n')
      .slice(0, 8)
      .join('\n    ');
    const where = file === undefined ? '?' : path.relative(process.cwd(), file);
    failures.push(`not ok: ${name}\n  at ${where}:${line ?? '?'}\n    ${message}`);
  }
  if (failures.length === 0) return;
  yield `\n# ${failures.length} failed test${failures.length === 1 ? '' : 's'}:\n${failures.join('\n')}\n`;
}
