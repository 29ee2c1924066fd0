import { listSetting, type SettingParser } from './setting-types.js';

const list = listSetting();

/** A DNS name or IPv4 address, or an IPv6 address in brackets; then an optional port. */
const HOST_VALUE =
  /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*|\[[0-9a-f:.]+\])(?::[1-9][0-9]{0,4})?$/;

/**
 * The `Host` values an answer may name in its URLs: `host` or `host:port`, as clients send them
 * (the port is left out only when it is 80), lowercased so that they compare equal to a request's.
 */
export function publicHostsSetting(): SettingParser<readonly string[]> {
  return (raw) => {
    const parsed = list(raw);
    if (!parsed.ok) return parsed;
    const hosts: string[] = [];
    for (const entry of parsed.value) {
      const host = entry.toLowerCase();
      const port = /:([0-9]+)$/.exec(host)?.[1];
      if (!HOST_VALUE.test(host) || (port !== undefined && Number(port) > 65535))
        return {
          ok: false,
          problem: `must list hosts such as images.example.com or localhost:8080 (a name or address and a port, no scheme or path), got "${entry}"`,
        };
      hosts.push(host);
    }
    return { ok: true, value: [...new Set(hosts)] };
  };
}
