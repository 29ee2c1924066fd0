import { createHash } from 'node:crypto';

/** What is left to hash: a value still to walk, or punctuation already decided. */
type Pending = { value: unknown } | { text: string };

/**
 * SHA-256 of a parsed JSON body in canonical form (object keys sorted, no whitespace), so that a
 * retry that re-serialises the same body differently still matches. Fed piece by piece: a body
 * of 240 MB of base64 images is never copied into one more string.
 *
 * It runs before validation, on whatever the caller sent, so the walk keeps its own stack: a
 * body nested 100 000 levels deep is hashed like any other and then refused by validation,
 * instead of overflowing the call stack.
 */
export function fingerprintOf(body: unknown): string {
  const hash = createHash('sha256');
  const pending: Pending[] = [{ value: body }];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    if ('text' in next) {
      hash.update(next.text);
      continue;
    }
    const { value } = next;
    if (value === null || typeof value !== 'object') {
      hash.update(JSON.stringify(value) ?? 'null');
      continue;
    }
    // Pushed in reverse, so that they come off the stack in order.
    if (Array.isArray(value)) {
      pending.push({ text: ']' });
      for (let index = value.length - 1; index >= 0; index--) {
        pending.push({ value: value[index] as unknown });
        if (index > 0) pending.push({ text: ',' });
      }
      hash.update('[');
      continue;
    }
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record).sort();
    pending.push({ text: '}' });
    for (let index = keys.length - 1; index >= 0; index--) {
      const key = keys[index] as string;
      pending.push({ value: record[key] });
      pending.push({ text: `${index > 0 ? ',' : ''}${JSON.stringify(key)}:` });
    }
    hash.update('{');
  }
  return hash.digest('hex');
}

/**
 * The fingerprint of a body sent as a task submission: the same body sent synchronously is a
 * different request, so one key cannot replay a task id as a result or the reverse.
 */
export function taskFingerprintOf(body: unknown): string {
  return createHash('sha256').update('task:').update(fingerprintOf(body)).digest('hex');
}
