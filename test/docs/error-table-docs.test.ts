import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { it } from 'node:test';
import { ERROR_TABLE, LEDGER_CODES } from '../../src/errors/error-table.js';

it('docs/errors.md lists exactly the codes and statuses of the error table', async () => {
  const markdown = await readFile('docs/errors.md', 'utf8');
  const answered = markdown.slice(0, markdown.indexOf('## Ledger-only codes'));
  const documented = [...answered.matchAll(/^\|\s*(\d{3})\s*\|\s*`([\w.]+)`\s*\|/gm)].map(
    ([, status, code]) => [code, Number(status)],
  );
  const table = Object.entries(ERROR_TABLE).map(([code, { status }]) => [code, status]);
  assert.deepEqual(
    documented.sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
    table.sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
  );
});

it('docs/errors.md lists exactly the ledger-only codes and the statuses their rows record', async () => {
  const markdown = await readFile('docs/errors.md', 'utf8');
  const section = markdown.slice(markdown.indexOf('## Ledger-only codes'));
  const documented = [...section.matchAll(/^\|\s*(\d{1,3})\s*\|\s*`(\w+)`\s*\|/gm)].map(
    ([, status, code]) => [code, Number(status)],
  );
  const table = Object.entries(LEDGER_CODES).map(([code, { status }]) => [code, status]);
  assert.deepEqual(
    documented.sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
    table.sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
  );
});
