// Runs every test/**/*.test.ts with node's own test runner (Node 20's --test takes no globs).
// IMAGEGATE_REQUIRE_SERVICES=1 (set by .ci/run) turns a skipped PostgreSQL/Redis test into a failure.
import { spawn } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import path from 'node:path';

async function findTests(directory) {
  const entries = await readdir(directory, { withFileTypes: true });
  const files = await Promise.all(
    entries.map((entry) => {
      const full = path.join(directory, entry.name);
      if (entry.isDirectory()) return findTests(full);
      return entry.name.endsWith('.test.ts') ? [full] : [];
    }),
  );
  return files.flat().sort();
}

const filters = process.argv.slice(2);
const all = await findTests('test');
const files =
  filters.length === 0
    ? all
    : all.filter((file) => filters.some((filter) => file.includes(filter)));
if (files.length === 0) {
  console.error(`no test files match ${filters.join(' ')}`);
  process.exit(1);
}
const child = spawn(
  process.execPath,
  [
    '--import',
    'tsx',
    '--test',
    '--test-concurrency=2',
    '--test-reporter=tap',
    '--test-reporter-destination=stdout',
    // Repeated after the TAP stream ends, so that the tail of a long log still names each failure.
    '--test-reporter=./scripts/failure-summary-reporter.mjs',
    '--test-reporter-destination=stdout',
    ...files,
  ],
  {
    stdio: 'inherit',
  },
);
child.on('exit', (code, signal) => process.exit(signal === null ? (code ?? 1) : 1));
