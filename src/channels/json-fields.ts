/** Small readers for JSON answers of unknown shape, so adapters never index blindly. */

export type JsonObject = Record<string, unknown>;

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function objectAt(value: unknown, key: string): JsonObject | undefined {
  if (!isObject(value)) return undefined;
  const field = value[key];
  return isObject(field) ? field : undefined;
}

export function arrayAt(value: unknown, key: string): unknown[] | undefined {
  if (!isObject(value)) return undefined;
  const field = value[key];
  return Array.isArray(field) ? field : undefined;
}

export function stringAt(value: unknown, key: string): string | undefined {
  if (!isObject(value)) return undefined;
  const field = value[key];
  return typeof field === 'string' ? field : undefined;
}

export function countAt(value: unknown, key: string): number | undefined {
  if (!isObject(value)) return undefined;
  const field = value[key];
  return typeof field === 'number' && Number.isSafeInteger(field) && field >= 0 ? field : undefined;
}

export function parseJson(bytes: Buffer): unknown {
  try {
    return JSON.parse(bytes.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

/** Upstream text shortened for messages and logs. */
export function excerpt(text: string, length = 300): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > length ? `${flat.slice(0, length)}…` : flat;
}

/** `{input, output}` from a usage object carrying both `input_tokens` and `output_tokens`. */
export function tokensAt(usage: unknown): { tokens?: { input: number; output: number } } {
  const input = countAt(usage, 'input_tokens');
  const output = countAt(usage, 'output_tokens');
  return input === undefined || output === undefined ? {} : { tokens: { input, output } };
}
