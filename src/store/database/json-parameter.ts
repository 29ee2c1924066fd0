/**
 * A lone surrogate's escape as JSON.stringify writes it (`\udXXX`), where the backslash is not
 * itself escaped: preceded by an even number of backslashes. A surrogate of a well-formed pair is
 * written as the character itself, never escaped.
 */
const LONE_SURROGATE_ESCAPE = /(?<!\\)((?:\\\\)*)\\ud[89a-f][0-9a-f]{2}/g;

/**
 * `value` as the text of a PostgreSQL `json` parameter. PostgreSQL refuses a lone surrogate's
 * escape in JSON, and the whole statement with it; a string parameter with one is stored with
 * U+FFFD instead (UTF-8 cannot encode it). The JSON gets the same U+FFFD, so a caller's odd
 * account name never costs a request its row.
 */
export function jsonParameter(value: unknown): string {
  const json = JSON.stringify(value);
  return json.includes('\\ud') ? json.replace(LONE_SURROGATE_ESCAPE, '$1\\ufffd') : json;
}
