/** C0 controls and DEL: no name or identifier holds one, and PostgreSQL's text cannot hold U+0000. */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/;
const SURROGATE_PAIR = /[\ud800-\udbff][\udc00-\udfff]/g;

export function holdsControlCharacter(text: string): boolean {
  return CONTROL_CHARACTER.test(text);
}

/**
 * Half of a UTF-16 surrogate pair without the other half: JSON can carry one (`"\ud800"`), UTF-8
 * cannot encode it, so the database stores U+FFFD instead and the stored text no longer equals
 * the text in hand (a name compared or looked up again then misses its own row).
 */
function holdsLoneSurrogate(text: string): boolean {
  return !(text as unknown as WellFormedString).isWellFormed();
}

/** `String.prototype.isWellFormed` (ES2024, in Node 20), which the ES2023 typings lack. */
interface WellFormedString {
  isWellFormed(): boolean;
}

/**
 * Characters as the database counts them against a `varchar(n)`: code points, a surrogate pair
 * being one. SQLite does not enforce such a length; PostgreSQL refuses a longer value, and with it
 * the statement that writes it.
 */
export function characterCount(text: string): number {
  return text.length - (text.match(SURROGATE_PAIR)?.length ?? 0);
}

/**
 * The character in `text` that no name or identifier may hold, as a phrase ("a control
 * character"); undefined when there is none.
 */
export function unstorableCharacter(text: string): string | undefined {
  if (holdsControlCharacter(text)) return 'a control character';
  if (holdsLoneSurrogate(text)) return 'a lone surrogate (half of a UTF-16 pair)';
  return undefined;
}

/**
 * Why the database cannot hold `text` in a column of `maxCharacters`, as a phrase to follow the
 * field's name; undefined when it can.
 */
export function storedTextProblem(text: string, maxCharacters: number): string | undefined {
  const character = unstorableCharacter(text);
  if (character !== undefined) return `must not hold ${character}`;
  if (characterCount(text) > maxCharacters) return `must be at most ${maxCharacters} characters`;
  return undefined;
}
