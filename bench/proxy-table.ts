/** A Markdown table, columns padded so that it also reads well in a terminal. */
export function markdownTable(header: readonly string[], rows: readonly string[][]): string {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  const line = (row: readonly string[]) =>
    `| ${widths.map((width, column) => (row[column] ?? '').padEnd(width)).join(' | ')} |`;
  return [
    line(header),
    `|${widths.map((width) => '-'.repeat(width + 2)).join('|')}|`,
    ...rows.map(line),
  ].join('\n');
}

/** A figure with `digits` decimals, or a dash when there is none. */
export function figure(value: number | undefined, digits: number): string {
  return value === undefined || !Number.isFinite(value) ? '-' : value.toFixed(digits);
}
