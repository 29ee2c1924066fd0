/**
 * Cuts `text` to at most `limit` Unicode code points. A surrogate pair is one code point and is
 * never split. Strings of at most `limit` UTF-16 units are returned untouched without scanning.
 */
export function truncateCodePoints(
  text: string,
  limit: number,
): { text: string; truncated: boolean } {
  if (text.length <= limit) return { text, truncated: false };
  let units = 0;
  let points = 0;
  while (units < text.length && points < limit) {
    const code = text.charCodeAt(units);
    units += code >= 0xd800 && code <= 0xdbff && units + 1 < text.length ? 2 : 1;
    points++;
  }
  if (units >= text.length) return { text, truncated: false };
  return { text: text.slice(0, units), truncated: true };
}
