/**
 * DashScope's task times: `2025-01-15 19:57:47.489` (submit_time, scheduled_time, end_time), and
 * the list filters' `20250115195747`. The gateway writes and reads both in UTC.
 */
export function formatTaskTime(epochMs: number): string {
  return new Date(epochMs).toISOString().replace('T', ' ').replace('Z', '');
}

const FILTER_TIME = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})$/;

/** `YYYYMMDDhhmmss` in UTC to milliseconds since the epoch; undefined when it is not one. */
export function parseFilterTime(text: string): number | undefined {
  const match = FILTER_TIME.exec(text);
  if (match === null) return undefined;
  const [year, month, day, hour, minute, second] = match.slice(1).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const epochMs = Date.UTC(year, month - 1, day, hour, minute, second);
  const back = new Date(epochMs);
  // Date.UTC rolls 20250231 over into March: such a date is not one.
  if (
    back.getUTCMonth() !== month - 1 ||
    back.getUTCDate() !== day ||
    hour > 23 ||
    minute > 59 ||
    second > 59
  )
    return undefined;
  return epochMs;
}
