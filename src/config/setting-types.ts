/**
 * How one setting is read. A setting may come from the config file (already typed by YAML/JSON)
 * or from the environment (always a string); `parse` accepts both and returns the value or a
 * problem in words.
 */
export type Parsed<T> = { ok: true; value: T } | { ok: false; problem: string };

export type SettingParser<T> = (raw: unknown) => Parsed<T>;

const ok = <T>(value: T): Parsed<T> => ({ ok: true, value });
const fail = <T>(problem: string): Parsed<T> => ({ ok: false, problem });

export function stringSetting(pattern?: RegExp, shape?: string): SettingParser<string> {
  return (raw) => {
    if (typeof raw !== 'string') return fail('must be a string');
    if (pattern !== undefined && !pattern.test(raw))
      return fail(`must be ${shape ?? `of the form ${pattern}`}`);
    return ok(raw);
  };
}

export function integerSetting(min: number, max: number): SettingParser<number> {
  return (raw) => {
    const value =
      typeof raw === 'string' && /^-?[0-9]+$/.test(raw.trim()) ? Number(raw.trim()) : raw;
    if (typeof value !== 'number' || !Number.isSafeInteger(value))
      return fail('must be an integer');
    if (value < min || value > max) return fail(`must be between ${min} and ${max}`);
    return ok(value);
  };
}

export function booleanSetting(): SettingParser<boolean> {
  return (raw) => {
    if (typeof raw === 'boolean') return ok(raw);
    if (raw === 'true' || raw === '1') return ok(true);
    if (raw === 'false' || raw === '0') return ok(false);
    return fail('must be true or false');
  };
}

export function enumSetting<const T extends string>(values: readonly T[]): SettingParser<T> {
  return (raw) =>
    typeof raw === 'string' && (values as readonly string[]).includes(raw)
      ? ok(raw as T)
      : fail(`must be one of ${values.join(', ')}`);
}

/** A comma-separated list in the environment, or a list in the file. */
export function listSetting(): SettingParser<string[]> {
  return (raw) => {
    if (typeof raw === 'string')
      return ok(
        raw
          .split(',')
          .map((item) => item.trim())
          .filter((item) => item !== ''),
      );
    if (Array.isArray(raw) && raw.every((item) => typeof item === 'string'))
      return ok(raw as string[]);
    return fail('must be a list of strings');
  };
}

export function urlSetting(protocols: readonly string[]): SettingParser<string> {
  return (raw) => {
    if (typeof raw !== 'string') return fail('must be a URL');
    try {
      const url = new URL(raw);
      if (!protocols.includes(url.protocol))
        return fail(
          `must be a URL with scheme ${protocols.map((p) => p.slice(0, -1)).join(' or ')}`,
        );
      return ok(raw);
    } catch {
      return fail('must be a URL');
    }
  };
}
