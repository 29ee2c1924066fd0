import type { UsageRow } from '../domain/usage-row.js';
import {
  type Parameter,
  parametersOf,
  placeholderRows,
  statementsByCount,
} from './hot-statements.js';
import { LEDGER_COLUMNS, ledgerValues } from './usage-rows.js';

const COLUMNS = LEDGER_COLUMNS.join(', ');
const REPLACED = LEDGER_COLUMNS.filter((column) => column !== 'id')
  .map((column) => `${column} = excluded.${column}`)
  .join(', ');

/** Inserts rows; a row whose id is already there is kept (a retried batch adds nothing). */
export const insertLedgerRows = statementsByCount(
  (count) =>
    `insert into usage_ledger (${COLUMNS}) values ${placeholderRows(count, LEDGER_COLUMNS.length)} on conflict (id) do nothing`,
);

/** Inserts rows; a row whose id is already there (a reclaimed request's stand-in) is replaced. */
export const upsertLedgerRows = statementsByCount(upsertLedgerText);

/** The text of `upsertLedgerRows(count)`, for statements that carry it inside a larger one. */
export function upsertLedgerText(count: number): string {
  return `insert into usage_ledger (${COLUMNS}) values ${placeholderRows(count, LEDGER_COLUMNS.length)} on conflict (id) do update set ${REPLACED}`;
}

/** The parameters of `rows` for either statement. */
export function ledgerParameters(rows: readonly UsageRow[]): Parameter[] {
  return parametersOf(rows, ledgerValues);
}
