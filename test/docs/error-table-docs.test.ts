import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { it } from 'node:test';
import { ERROR_TABLE } from '../../src/errors/error-table.js';

it('docs/errors.md lists exactly the codes and statuses of the error table', async () => {
  const markdown = await readFile('docs/errors.md', 'utf8');
  const documented = [...markdown.matchAll(/^\|\s*(\d{3})\s*\|\s*`([\w.]+)`\s*\|/gm)].map(
    ([, status, code]) => [code, Number(status)],
  );
  const table = Object.entries(ERROR_TABLE).map(([code, { status }]) => [code, status]);
  assert.deepEqual(
    documented.sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
    table.sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
  );
});
