import { listSetting, type SettingParser } from './setting-types.js';

/** Every origin: the one entry that stands for all, and must stand alone. */
export const ANY_ORIGIN = '*';

const list = listSetting();

/**
 * Origins allowed to call the gateway from a browser: `*`, or a list of `scheme://host[:port]`
 * as browsers send them in `Origin` (lowercase host, no default port, no path), which the
 * configured ones are normalised to so that they compare equal.
 */
export function corsOriginsSetting(): SettingParser<readonly string[]> {
  return (raw) => {
    const parsed = list(raw);
    if (!parsed.ok) return parsed;
    const entries = parsed.value;
    if (entries.includes(ANY_ORIGIN))
      return entries.length === 1
        ? { ok: true, value: [ANY_ORIGIN] }
        : { ok: false, problem: 'must be * alone, or a list of origins without *' };
    const origins: string[] = [];
    for (const entry of entries) {
      const origin = originOf(entry);
      if (origin === undefined)
        return {
          ok: false,
          problem: `must list origins such as https://app.example.com (scheme, host and port only), got "${entry}"`,
        };
      origins.push(origin);
    }
    return { ok: true, value: [...new Set(origins)] };
  };
}

function originOf(text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return undefined;
  }
  const bare =
    (url.protocol === 'http:' || url.protocol === 'https:') &&
    url.username === '' &&
    url.password === '' &&
    url.search === '' &&
    url.hash === '' &&
    url.pathname === '/';
  return bare ? url.origin : undefined;
}
