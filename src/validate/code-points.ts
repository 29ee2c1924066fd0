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
    units += isSurrogatePairAt(text, units) ? 2 : 1;
    points++;
  }
  if (units >= text.length) return { text, truncated: false };
  return { text: text.slice(0, units), truncated: true };
}

/** A high surrogate followed by a low one; a lone surrogate is a code point of its own. */
function isSurrogatePairAt(text: string, index: number): boolean {
  const high = text.charCodeAt(index);
  if (high < 0xd800 || high > 0xdbff) return false;
  const low = text.charCodeAt(index + 1);
  return low >= 0xdc00 && low <= 0xdfff;
}
