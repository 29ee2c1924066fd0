/** A ledger row as GET /admin/usage and /me/usage list it. */
export interface UsageRecord {
  time: string;
  request_id: string;
  token_id: string | null;
  account: string;
  model: string | null;
  status: number;
  error_code: string | null;
  images_reported: number | null;
  images_received: number;
  images_delivered: number;
  images_billed: number;
  cost: string;
}

export type GroupKey = 'model' | 'token_id' | 'account';

/** Images and cost per UTC day and group, for the charts. */
export function perDay(rows: readonly UsageRecord[], key: GroupKey) {
  const days = new Map<string, Map<string, { images: number; cost: number }>>();
  for (const row of rows) {
    const day = row.time.slice(0, 10);
    const group = row[key] ?? '-';
    const groups = days.get(day) ?? new Map<string, { images: number; cost: number }>();
    const sum = groups.get(group) ?? { images: 0, cost: 0 };
    sum.images += row.images_billed;
    sum.cost += Number(row.cost);
    groups.set(group, sum);
    days.set(day, groups);
  }
  return [...days].sort(([a], [b]) => a.localeCompare(b));
}

/**
 * Whether a row's books balance: what the upstream reported was received, what was received was
 * delivered, and what was delivered was billed. A row that does not is what an operator reads.
 */
export function unbalanced(row: UsageRecord): string | undefined {
  if (row.images_reported !== null && row.images_reported !== row.images_received)
    return 'reported ≠ received';
  if (row.images_received < row.images_delivered) return 'delivered more than received';
  if (row.images_delivered !== row.images_billed) return 'delivered ≠ billed';
  return undefined;
}
