import { sql, type Transaction } from 'kysely';
import { STAND_IN_STATUS, type UsageRow } from '../../domain/usage-row.js';
import {
  type HotStatements,
  type Parameter,
  parametersOf,
  placeholderRows,
  Statement,
  type StatementRunner,
  statementsByCount,
} from './hot-statements.js';
import { jsonParameter } from '../database/json-parameter.js';
import type { DatabaseSchema } from '../database/schema.js';
import { LEDGER_COLUMNS, ledgerValues, toLedgerRow } from './usage-rows.js';

/**
 * Every usage_ledger row is written here, under one rule. A row whose id is already there is kept
 * (a retried write adds nothing, and a request's own row is never overwritten), unless it is a
 * stand-in (`STAND_IN_STATUS`), which the new row replaces. The images delivered and billed and
 * their cost never go down: a partial bill whose commit went through while its answer was lost is
 * counted on the stand-in and in the token's `images_used`, but not by the request, which stopped
 * there; the row keeps it, so that the books still balance. A reclaimed reservation's abandoned
 * row over a partly billed stand-in keeps the images that stand-in says were billed and delivered.
 */
const KEPT_LARGER: ReadonlySet<string> = new Set([
  'images_delivered',
  'images_billed',
  'cost_micros',
]);

const COLUMNS = LEDGER_COLUMNS.join(', ');

const LEDGER_ROW_RULE = `on conflict (id) do update set ${LEDGER_COLUMNS.filter(
  (column) => column !== 'id',
)
  .map((column) =>
    KEPT_LARGER.has(column)
      ? `${column} = case when usage_ledger.${column} > excluded.${column} then usage_ledger.${column} else excluded.${column} end`
      : `${column} = excluded.${column}`,
  )
  .join(', ')} where usage_ledger.status = ${STAND_IN_STATUS}`;

/**
 * Rows per INSERT: about 25 columns each stays well under SQLite's 32,766 bound parameters, and
 * the statement is built (and on SQLite prepared) once per row count up to this.
 */
const ROWS_PER_INSERT = 256;

/** Rows with a parameter per value, built per row count. */
const insertLedgerRows = statementsByCount(
  (count) =>
    `insert into usage_ledger (${COLUMNS}) values ${placeholderRows(count, LEDGER_COLUMNS.length)} ${LEDGER_ROW_RULE}`,
);

/**
 * PostgreSQL: the text inserting the rows of one JSON parameter (`ledgerJson`), read into the
 * table's own row type (`json`, not `jsonb`: parsed once, where jsonb would be parsed and then
 * rebuilt); only when `condition` (an SQL expression) holds, if given. The text is the same for
 * any number of rows, so it is always prepared. A statement with a parameter per value is built
 * per row count and kept prepared only up to 16 rows; above, the server parsed and planned
 * hundreds of parameters on every call, at twice the server time per row and twice the client's.
 */
export function ledgerJsonInsertText(condition?: string): string {
  const where = condition === undefined ? '' : ` where ${condition}`;
  return `insert into usage_ledger (${COLUMNS}) select ${COLUMNS} from json_populate_recordset(null::usage_ledger, ?::json)${where} ${LEDGER_ROW_RULE}`;
}

const insertLedgerJson = new Statement(ledgerJsonInsertText());

/** The parameter of `rows` for `ledgerJsonInsertText`: objects keyed by column. */
export function ledgerJson(rows: readonly UsageRow[]): string {
  return jsonParameter(rows.map(toLedgerRow));
}

function ledgerParameters(rows: readonly UsageRow[]): Parameter[] {
  return parametersOf(rows, ledgerValues);
}

/**
 * Writes `rows` through the request path's statements, alone or in the transaction `runner` is
 * in: on PostgreSQL as one JSON parameter, on SQLite with a parameter per value.
 */
export async function writeLedgerRows(
  runner: StatementRunner,
  dialect: HotStatements['dialect'],
  rows: readonly UsageRow[],
): Promise<void> {
  for (let start = 0; start < rows.length; start += ROWS_PER_INSERT) {
    const batch = rows.slice(start, start + ROWS_PER_INSERT);
    if (dialect === 'postgres') await runner.run(insertLedgerJson, [ledgerJson(batch)]);
    else await runner.run(insertLedgerRows(batch.length), ledgerParameters(batch));
  }
}

/** Writes `rows` in a Kysely transaction, under the same rule. */
export async function writeLedgerRowsIn(
  trx: Transaction<DatabaseSchema>,
  rows: readonly UsageRow[],
): Promise<void> {
  for (let start = 0; start < rows.length; start += ROWS_PER_INSERT) {
    await trx
      .insertInto('usage_ledger')
      .values(rows.slice(start, start + ROWS_PER_INSERT).map(toLedgerRow))
      .modifyEnd(sql.raw(LEDGER_ROW_RULE))
      .execute();
  }
}
