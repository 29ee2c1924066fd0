import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { it } from 'node:test';
import { SETTINGS } from '../../src/config/settings.js';

it('docs/configuration.md documents every setting by its environment name and file key', async () => {
  const markdown = await readFile('docs/configuration.md', 'utf8');
  const missing = Object.values(SETTINGS)
    .filter(
      (setting) =>
        !new RegExp(
          // A file-only setting (no environment variable) is documented with `—` in that column.
          `^\\|\\s*${setting.env === undefined ? '—' : `\`${setting.env}\``}\\s*\\|\\s*\`${setting.file}\`\\s*\\|`,
          'm',
        ).test(markdown),
    )
    .map((setting) => setting.env ?? setting.file);
  assert.deepEqual(missing, []);
});
