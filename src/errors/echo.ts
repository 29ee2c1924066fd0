/** The most characters of a caller's text that an error message repeats. */
export const ECHO_MAX_CHARACTERS = 100;

/**
 * A caller's text (a field name, a JSON path, a query or header value) as an error message repeats
 * it: whole when short, otherwise its first ECHO_MAX_CHARACTERS characters, an ellipsis and its
 * length, so that an error body stays small whatever the caller sent.
 */
export function echo(text: string): string {
  if (text.length <= ECHO_MAX_CHARACTERS) return text;
  return `${text.slice(0, ECHO_MAX_CHARACTERS)}… (${text.length} characters)`;
}

/** A caller's value quoted as JSON, bounded as `echo` bounds text. */
export function echoQuoted(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(echo(value));
  return echo(JSON.stringify(value) ?? String(value));
}
