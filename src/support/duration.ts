const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400, w: 604_800 };

/** Parses `90s`, `15m`, `12h`, `30d`, `2w` into seconds; undefined when the text is not of that form. */
export function parseDuration(text: string): number | undefined {
  const match = /^([1-9][0-9]{0,6})([smhdw])$/.exec(text.trim());
  if (match === null) return undefined;
  return Number(match[1]) * (UNIT_SECONDS[match[2] as string] as number);
}
