import { createHash, type Hash } from 'node:crypto';

/**
 * SHA-256 of a parsed JSON body in canonical form (object keys sorted, no whitespace), so that a
 * retry that re-serialises the same body differently still matches. Fed piece by piece: a body
 * of 240 MB of base64 images is never copied into one more string.
 */
export function fingerprintOf(body: unknown): string {
  const hash = createHash('sha256');
  feed(hash, body);
  return hash.digest('hex');
}

function feed(hash: Hash, value: unknown): void {
  if (value === null || typeof value !== 'object') {
    hash.update(JSON.stringify(value) ?? 'null');
    return;
  }
  if (Array.isArray(value)) {
    hash.update('[');
    value.forEach((item, index) => {
      if (index > 0) hash.update(',');
      feed(hash, item);
    });
    hash.update(']');
    return;
  }
  hash.update('{');
  const record = value as Record<string, unknown>;
  Object.keys(record)
    .sort()
    .forEach((key, index) => {
      if (index > 0) hash.update(',');
      hash.update(JSON.stringify(key));
      hash.update(':');
      feed(hash, record[key]);
    });
  hash.update('}');
}
