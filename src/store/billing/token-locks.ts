/**
 * PostgreSQL: the `locked` entry of a data-modifying WITH that locks the rows of the tokens named
 * by `tokenIds` (a query of one `token_id` column), in the order of their ids. An UPDATE of those
 * tokens that joins `locked` reads it whole before it changes a row, so statements of several
 * nodes never lock the tokens they share in opposite orders. The order is the ids' bytes
 * (`collate "C"`), as the transactions' JavaScript sort orders them: under a database's own
 * collation (en_US.UTF-8, ICU) `tok_B` sorts after `tok_a`, and a statement and a transaction
 * could lock two tokens in opposite orders. The ids go in as an array (`= any`), which the
 * prepared statement's generic plan reads through the primary key; a join or `in (select ...)`
 * over JSON is planned as a scan of every token. `columns` are read as locked: the rows' latest
 * versions, which another transaction may have changed while this one waited for the lock.
 */
export function tokensLockedInIdOrder(tokenIds: string, columns = 'id'): string {
  return `locked as materialized (
       select ${columns} from tokens where id = any(array(${tokenIds})) order by id collate "C" for update)`;
}
