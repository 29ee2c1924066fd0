// Runs every bench/*.bench.ts (or those whose names contain an argument) and prints one table.
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Bench, BenchRow } from './bench-row.js';

const directory = path.dirname(fileURLToPath(import.meta.url));
const filters = process.argv.slice(2);
const files = (await readdir(directory))
  .filter((file) => file.endsWith('.bench.ts'))
  .filter((file) => filters.length === 0 || filters.some((filter) => file.includes(filter)))
  .sort();

const rows: (BenchRow & { file: string })[] = [];
for (const file of files) {
  const bench = (await import(pathToFileURL(path.join(directory, file)).href)) as {
    default: Bench;
  };
  process.stderr.write(`running ${file}...\n`);
  for (const row of await bench.default()) rows.push({ ...row, file });
}

const header = ['benchmark', 'value', 'unit', 'note'];
const table = [
  header,
  ...rows.map((row) => [
    row.name,
    row.value.toFixed(row.value < 10 ? 2 : 1),
    row.unit,
    row.note ?? '',
  ]),
];
const widths = header.map((_, column) =>
  Math.max(...table.map((row) => (row[column] as string).length)),
);
const line = (row: string[]) =>
  `| ${row.map((cell, column) => cell.padEnd(widths[column] as number)).join(' | ')} |`;
console.log(line(header));
console.log(`|${widths.map((width) => '-'.repeat(width + 2)).join('|')}|`);
for (const row of table.slice(1)) console.log(line(row));
console.log(`\nnode ${process.version}, ${process.platform}/${process.arch}`);
