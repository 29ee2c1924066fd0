import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openDatabase } from '../../src/store/database/database.js';
import { SqlUsageStore } from '../../src/store/usage-store.js';
import { usageRow } from '../helpers/usage-rows.js';
import { runInProcess } from './cli-runs.js';

/** What an external token's `sub` and `jti` carried into ledger rows written before `ext:`. */
const FORMULA_ACCOUNT = '=HYPERLINK("https://evil.example","invoice")';
const FORMULA_TOKEN = '=1+2';
/** A workspace is printable ASCII, which a spreadsheet may still run as a formula. */
const FORMULA_WORKSPACE = '=SUM(1+1)';
const ESCAPE_ACCOUNT = 'ext::\u001b[2J\u001b]0;pwned\u0007';

/** Whether a C0, DEL or C1 control character is in `text`. */
function hasControlCharacter(text: string): boolean {
  return [...text].some((character) => {
    const code = character.charCodeAt(0);
    return code < 0x20 || (code >= 0x7f && code <= 0x9f);
  });
}

describe('imagegate usage with hostile names in the ledger', () => {
  let dataDir: string;

  before(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'imagegate-usage-injection-'));
    const database = await openDatabase({
      kind: 'sqlite',
      file: path.join(dataDir, 'imagegate.db'),
    });
    const row = (requestId: string, tokenId: string | undefined, account: string) =>
      usageRow(1, { requestId, tokenId, account });
    await new SqlUsageStore(database).insert([
      { ...row('req-formula', FORMULA_TOKEN, FORMULA_ACCOUNT), workspace: FORMULA_WORKSPACE },
      row('req-escape', undefined, ESCAPE_ACCOUNT),
    ]);
    await database.close();
  });
  after(() => rm(dataDir, { recursive: true, force: true }));

  const cli = (...args: string[]) => runInProcess({ IMAGEGATE_DATA_DIR: dataDir }, ...args);

  it('writes CSV whose cells no spreadsheet runs as formulas', async () => {
    const [rows, byToken] = await Promise.all([
      cli('usage', '--csv'),
      cli('usage', '--group-by', 'token', '--csv'),
    ]);
    assert.equal(rows.code, 0, rows.stderr);
    assert.match(
      rows.stdout,
      /,req-formula,'=1\+2,"'=HYPERLINK\(""https:\/\/evil\.example"",""invoice""\)",/,
    );
    assert.match(rows.stdout, /,'=SUM\(1\+1\),dashscope\r\n/, 'the workspace is guarded too');
    assert.match(byToken.stdout, /\r\n'=1\+2,1,1,0,/);
    assert.match(byToken.stdout, /\r\n-,1,1,0,/, 'the missing token id stays a plain -');
  });

  it('prints a table with no escape sequence in it', async () => {
    const table = await cli('usage');
    assert.equal(table.code, 0, table.stderr);
    for (const line of table.stdout.split('\n'))
      assert.ok(!hasControlCharacter(line), JSON.stringify(line));
    assert.ok(table.stdout.includes('ext::\\x1b[2J\\x1b]0;pwned\\x07'), table.stdout);
  });

  it('keeps JSON exact', async () => {
    const json = await cli('usage', '--json');
    assert.equal(json.code, 0, json.stderr);
    const { rows } = JSON.parse(json.stdout) as { rows: { token_id: string; account: string }[] };
    assert.deepEqual(
      rows.map((entry) => [entry.token_id, entry.account]).sort(),
      [
        [FORMULA_TOKEN, FORMULA_ACCOUNT],
        [null, ESCAPE_ACCOUNT],
      ].sort(),
    );
  });
});
