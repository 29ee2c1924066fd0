import type { LookupAddress, LookupOptions } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { Agent } from 'undici';
import type { ResolvedAddress } from './address-guard.js';

function wantedFamily(options: LookupOptions): 4 | 6 | undefined {
  const family = options.family;
  if (family === 4 || family === 'IPv4') return 4;
  if (family === 6 || family === 'IPv6') return 6;
  return undefined;
}

/**
 * An undici Agent for one host whose sockets can only reach `addresses`, the ones the address
 * guard checked: its DNS lookup answers from that list and never asks DNS again. TLS still
 * verifies the certificate against the host name, since undici passes it as the server name.
 */
export function createPinnedAgent(
  hostname: string,
  addresses: readonly ResolvedAddress[],
  connectTimeoutMs: number,
): Agent {
  const pinnedLookup: LookupFunction = (requested, options, callback) => {
    const family = wantedFamily(options);
    const candidates = addresses.filter((a) => family === undefined || a.family === family);
    const first = candidates[0];
    if (requested !== hostname || first === undefined) {
      const error: NodeJS.ErrnoException = new Error(`no checked address for ${requested}`);
      error.code = 'ENOTFOUND';
      callback(error, '', 0);
      return;
    }
    if (options.all === true) {
      const all: LookupAddress[] = candidates.map(({ address, family }) => ({ address, family }));
      callback(null, all);
    } else {
      callback(null, first.address, first.family);
    }
  };
  return new Agent({
    connect: { lookup: pinnedLookup, timeout: connectTimeoutMs },
    connections: 1,
  });
}
