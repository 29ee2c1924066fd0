import { inPrefix, type IpAddress, parseIpAddress } from './ip-address.js';

export type AddressClass =
  | 'public'
  | 'loopback'
  | 'private'
  | 'shared'
  | 'link-local'
  | 'unique-local'
  | 'multicast'
  | 'unspecified'
  | 'broadcast'
  | 'reserved'
  | 'cloud metadata';

interface Range {
  network: Uint8Array;
  prefixLength: number;
  addressClass: AddressClass;
}

/** IPv6 ranges whose last 32 bits (or, for 6to4, bits 16-48) carry an IPv4 address. */
interface EmbeddingRange {
  network: Uint8Array;
  prefixLength: number;
  ipv4At: number;
}

function range(cidr: string, addressClass: AddressClass): Range {
  const [address = '', prefix = ''] = cidr.split('/');
  const parsed = parseIpAddress(address);
  if (parsed === undefined) throw new Error(`bad range ${cidr}`);
  return { network: parsed.bytes, prefixLength: Number(prefix), addressClass };
}

function embedding(cidr: string, ipv4At: number): EmbeddingRange {
  const { network, prefixLength } = range(cidr, 'public');
  return { network, prefixLength, ipv4At };
}

/** First match wins, so single addresses come before the ranges that contain them. */
const IPV4_RANGES: readonly Range[] = [
  range('169.254.169.254/32', 'cloud metadata'), // AWS, GCP, Azure, OpenStack, ...
  range('100.100.100.200/32', 'cloud metadata'), // Alibaba Cloud
  range('168.63.129.16/32', 'cloud metadata'), // Azure wire server
  range('255.255.255.255/32', 'broadcast'),
  range('0.0.0.0/32', 'unspecified'),
  range('0.0.0.0/8', 'reserved'),
  range('10.0.0.0/8', 'private'),
  range('100.64.0.0/10', 'shared'),
  range('127.0.0.0/8', 'loopback'),
  range('169.254.0.0/16', 'link-local'),
  range('172.16.0.0/12', 'private'),
  range('192.0.0.0/24', 'reserved'),
  range('192.168.0.0/16', 'private'),
  range('198.18.0.0/15', 'reserved'),
  range('224.0.0.0/4', 'multicast'),
  range('240.0.0.0/4', 'reserved'),
];

const IPV6_RANGES: readonly Range[] = [
  range('fd00:ec2::254/128', 'cloud metadata'), // AWS over IPv6
  range('::/128', 'unspecified'),
  range('::1/128', 'loopback'),
  range('::/96', 'reserved'), // deprecated IPv4-compatible addresses
  range('64:ff9b:1::/48', 'private'), // local-use NAT64
  range('100::/64', 'reserved'), // discard-only
  range('2001:db8::/32', 'reserved'), // documentation
  range('fc00::/7', 'unique-local'),
  range('fe80::/10', 'link-local'),
  range('fec0::/10', 'private'), // deprecated site-local
  range('ff00::/8', 'multicast'),
];

/** An IPv6 address in these ranges reaches the IPv4 address inside it, so it is judged by that. */
const IPV4_EMBEDDINGS: readonly EmbeddingRange[] = [
  embedding('::ffff:0:0/96', 12), // IPv4-mapped
  embedding('64:ff9b::/96', 12), // NAT64
  embedding('2002::/16', 2), // 6to4
];

function classifyIpv4(bytes: Uint8Array): AddressClass {
  return (
    IPV4_RANGES.find((r) => inPrefix(bytes, r.network, r.prefixLength))?.addressClass ?? 'public'
  );
}

function classifyIp(address: IpAddress): AddressClass {
  if (address.family === 4) return classifyIpv4(address.bytes);
  const embedded = IPV4_EMBEDDINGS.find((e) => inPrefix(address.bytes, e.network, e.prefixLength));
  if (embedded !== undefined) {
    return classifyIpv4(address.bytes.subarray(embedded.ipv4At, embedded.ipv4At + 4));
  }
  return (
    IPV6_RANGES.find((r) => inPrefix(address.bytes, r.network, r.prefixLength))?.addressClass ??
    'public'
  );
}

/** Classifies a literal IP address; throws on anything that is not one. */
export function classifyAddress(address: string): AddressClass {
  const parsed = parseIpAddress(address);
  if (parsed === undefined) throw new TypeError(`not an IP address: ${address}`);
  return classifyIp(parsed);
}

const DESCRIPTIONS: Readonly<Record<AddressClass, string>> = {
  public: 'a public address',
  loopback: 'a loopback address',
  private: 'a private address',
  shared: 'a shared (carrier-grade NAT) address',
  'link-local': 'a link-local address',
  'unique-local': 'a unique-local address',
  multicast: 'a multicast address',
  unspecified: 'the unspecified address',
  broadcast: 'the broadcast address',
  reserved: 'a reserved address',
  'cloud metadata': 'a cloud metadata address',
};

/** `loopback` -> `a loopback address`, for error messages. */
export function describeAddressClass(addressClass: AddressClass): string {
  return DESCRIPTIONS[addressClass];
}
