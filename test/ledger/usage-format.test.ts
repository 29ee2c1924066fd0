import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { toCsv, toTable, type UsageRecord } from '../../src/ledger/usage-format.js';

/** Whether a C0, DEL or C1 control character is in `text`. */
function hasControlCharacter(text: string): boolean {
  return [...text].some((character) => {
    const code = character.charCodeAt(0);
    return code < 0x20 || (code >= 0x7f && code <= 0x9f);
  });
}

describe('usage CSV: no cell is read as a formula', () => {
  const columns = ['value'];
  const csvCell = (value: UsageRecord[string]) =>
    toCsv([{ value }], columns).split('\r\n')[1] as string;

  it("puts a ' before text starting with =, +, -, @, a tab or a carriage return", () => {
    assert.equal(
      csvCell('=HYPERLINK("https://evil.example","click")'),
      `"'=HYPERLINK(""https://evil.example"",""click"")"`,
    );
    assert.equal(csvCell('+1+2'), "'+1+2");
    assert.equal(csvCell('-2+3'), "'-2+3");
    assert.equal(csvCell('@SUM(A1:A9)'), "'@SUM(A1:A9)");
    assert.equal(csvCell('\tcmd'), "'\tcmd");
    assert.equal(toCsv([{ value: '\r=1' }], columns), `value\r\n"'\r=1"\r\n`);
  });

  it('leaves numbers, other text, empty cells and the lone "-" of a missing group key as they are', () => {
    assert.equal(csvCell(-1), '-1');
    assert.equal(csvCell(0), '0');
    assert.equal(csvCell(false), 'false');
    assert.equal(csvCell(null), '');
    assert.equal(csvCell('-'), '-');
    assert.equal(csvCell('0.040000'), '0.040000');
    assert.equal(csvCell('2025-01-01T00:00:00.000Z'), '2025-01-01T00:00:00.000Z');
    assert.equal(csvCell('acme = partner'), 'acme = partner');
  });
});

describe('usage table: no control character reaches the terminal', () => {
  it('shows C0, DEL and C1 control characters, ESC included, as visible \\x escapes', () => {
    const table = toTable(
      [
        {
          account: '\u001b]8;;https://evil.example\u0007ok\u001b[2J',
          note: 'a\tb\nc\rd\u007f\u009b\u0085',
        },
      ],
      ['account', 'note'],
    );
    for (const line of table.split('\n'))
      assert.ok(!hasControlCharacter(line), JSON.stringify(line));
    assert.match(table, /\\x1b\]8;;https:\/\/evil\.example\\x07ok\\x1b\[2J/);
    assert.match(table, /a\\x09b\\x0ac\\x0dd\\x7f\\x9b\\x85/);
    assert.equal(table.split('\n').length, 3, 'one line per row, after the header');
  });

  it('keeps printable text, accents and emoji as they are', () => {
    const table = toTable([{ account: 'Zoë – 東京 🦊' }], ['account']);
    assert.equal(table, 'ACCOUNT\nZoë – 東京 🦊\n');
  });
});
