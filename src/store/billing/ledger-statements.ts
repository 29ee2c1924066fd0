import { STAND_IN_STATUS, type UsageRow } from '../../domain/usage-row.js';
import {
  type Parameter,
  parametersOf,
  placeholderRows,
  Statement,
  statementsByCount,
} from './hot-statements.js';
import { jsonParameter } from '../database/json-parameter.js';
import { LEDGER_COLUMNS, ledgerValues, toLedgerRow } from './usage-rows.js';

const COLUMNS = LEDGER_COLUMNS.join(', ');
const REPLACED = LEDGER_COLUMNS.filter((column) => column !== 'id')
  .map((column) => `${column} = excluded.${column}`)
  .join(', ');

/**
 * What the request's own row takes from a stand-in it replaces: everything, except that the images
 * billed (and their cost) never go down. A partial bill whose commit went through while its answer
 * was lost is counted on the stand-in and in the token's `images_used`, but not by the request,
 * which stopped there; the row keeps it, so that the books still balance.
 */
const REPLACING_STAND_IN = LEDGER_COLUMNS.filter((column) => column !== 'id')
  .map((column) =>
    column === 'images_billed' || column === 'cost_micros'
      ? `${column} = case when usage_ledger.images_billed > excluded.images_billed then usage_ledger.${column} else excluded.${column} end`
      : `${column} = excluded.${column}`,
  )
  .join(', ');

/**
 * A row whose id is already there is kept (a retried batch adds nothing, and a settlement's row is
 * never overwritten), unless it is a stand-in, which the request's own row replaces.
 */
const KEEP_ALL_BUT_STAND_INS = `on conflict (id) do update set ${REPLACING_STAND_IN} where usage_ledger.status = ${STAND_IN_STATUS}`;

/** Inserts the rows of requests that billed nothing more at their end (`KEEP_ALL_BUT_STAND_INS`). */
export const insertLedgerRows = statementsByCount(
  (count) =>
    `insert into usage_ledger (${COLUMNS}) values ${placeholderRows(count, LEDGER_COLUMNS.length)} ${KEEP_ALL_BUT_STAND_INS}`,
);

/** Inserts rows; a row whose id is already there (a reclaimed request's stand-in) is replaced. */
export const upsertLedgerRows = statementsByCount(
  (count) =>
    `insert into usage_ledger (${COLUMNS}) values ${placeholderRows(count, LEDGER_COLUMNS.length)} on conflict (id) do update set ${REPLACED}`,
);

/** The parameters of `rows` for either statement. */
export function ledgerParameters(rows: readonly UsageRow[]): Parameter[] {
  return parametersOf(rows, ledgerValues);
}

/**
 * PostgreSQL: rows as one JSON array, read into the table's own row type (`json`, not `jsonb`:
 * parsed once, where jsonb would be parsed and then rebuilt). The text is the same for any number
 * of rows, so it is always prepared. A statement with a parameter per value is built per row
 * count and kept prepared only up to 16 rows; above, the server parsed and planned hundreds of
 * parameters on every call, at twice the server time per row and twice the client's.
 */
const LEDGER_ROWS_FROM_JSON = `select ${COLUMNS} from json_populate_recordset(null::usage_ledger, ?::json)`;

/** PostgreSQL: `insertLedgerRows` with the rows as `ledgerJson`. */
export const insertLedgerJson = new Statement(
  `insert into usage_ledger (${COLUMNS}) ${LEDGER_ROWS_FROM_JSON} ${KEEP_ALL_BUT_STAND_INS}`,
);

/** PostgreSQL: the text of `upsertLedgerRows` with the rows as `ledgerJson`, for a larger statement. */
export const UPSERT_LEDGER_JSON_TEXT = `insert into usage_ledger (${COLUMNS}) ${LEDGER_ROWS_FROM_JSON} on conflict (id) do update set ${REPLACED}`;

/** The parameter of `rows` for the JSON statements: objects keyed by column. */
export function ledgerJson(rows: readonly UsageRow[]): string {
  return jsonParameter(rows.map(toLedgerRow));
}
