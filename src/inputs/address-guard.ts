import { lookup } from 'node:dns/promises';
import { type AddressClass, classifyAddress, describeAddressClass } from './classify-address.js';
import { invalidUrl } from './input-errors.js';
import { familyOf, parseIpAddress } from './ip-address.js';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Turns a host name into its addresses; injectable so tests can simulate DNS answers. */
export type HostResolver = (hostname: string) => Promise<ResolvedAddress[]>;

/** The class of an address image URLs may not reach, or undefined when it may be fetched. */
export type AddressPolicy = (address: string) => AddressClass | undefined;

/** Names that resolve to a cloud metadata service only from inside that cloud. */
const METADATA_HOSTNAMES: ReadonlySet<string> = new Set(['metadata.google.internal', 'metadata']);

export const resolveWithSystemDns: HostResolver = async (hostname) => {
  const answers = await lookup(hostname, { all: true });
  return answers.map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));
};

/**
 * The default policy. Cloud metadata addresses stay refused even when private addresses are
 * allowed: a developer machine in a cloud VM must not hand its instance credentials out.
 */
export function addressPolicy(allowPrivateAddresses: boolean): AddressPolicy {
  return (address) => {
    const addressClass = classifyAddress(address);
    if (addressClass === 'public') return undefined;
    if (addressClass === 'cloud metadata' || !allowPrivateAddresses) return addressClass;
    return undefined;
  };
}

/** `[::1]` -> `::1`, `Example.COM.` -> `example.com`. */
export function normalizeHostname(hostname: string): string {
  const unbracketed =
    hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return unbracketed.toLowerCase().replace(/\.$/, '');
}

function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  signal.throwIfAborted();
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

export interface HostCheck {
  policy: AddressPolicy;
  resolveHost: HostResolver;
}

/**
 * Resolves `hostname` and checks every address it resolves to against the policy. The caller
 * must connect to the returned addresses and nothing else: resolving again at connect time
 * would let a DNS server answer differently the second time (DNS rebinding).
 */
export async function resolveCheckedAddresses(
  hostname: string,
  path: string,
  check: HostCheck,
  signal: AbortSignal,
): Promise<ResolvedAddress[]> {
  const host = normalizeHostname(hostname);
  if (METADATA_HOSTNAMES.has(host)) {
    throw invalidUrl(
      path,
      `host ${host} is a cloud metadata service, which image URLs may not use`,
    );
  }
  const literal = parseIpAddress(host);
  if (literal !== undefined) {
    const refused = check.policy(host);
    if (refused !== undefined) {
      throw invalidUrl(
        path,
        `${host} is ${describeAddressClass(refused)}, which image URLs may not use`,
      );
    }
    return [{ address: host, family: familyOf(literal) }];
  }

  let addresses: ResolvedAddress[];
  try {
    addresses = await untilAborted(check.resolveHost(host), signal);
  } catch (error) {
    if (signal.aborted) throw error;
    addresses = [];
  }
  if (addresses.length === 0) throw invalidUrl(path, `host ${host} could not be resolved`);
  for (const { address } of addresses) {
    const refused = check.policy(address);
    // The address itself is left out: it would tell the caller how internal names resolve.
    if (refused !== undefined) {
      throw invalidUrl(
        path,
        `host ${host} resolves to ${describeAddressClass(refused)}, which image URLs may not use`,
      );
    }
  }
  return addresses;
}
