import ipaddr from 'ipaddr.js';
import { type IpAddress, parseIpAddress, translatedIpv4 } from './ip-address.js';

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

/**
 * Cloud metadata and credential services, checked before any other class: they stay refused
 * even when private addresses are allowed. Also checked against the IPv4 address inside an
 * IPv6 form that reaches one.
 */
const CLOUD_METADATA = {
  metadata: [
    '169.254.169.254/32', // AWS, GCP, Azure, OpenStack, Oracle Cloud, DigitalOcean, ...
    '169.254.170.2/32', // AWS ECS container credentials
    '169.254.170.23/32', // AWS EKS Pod Identity
    '192.0.0.192/32', // Oracle Cloud
    '100.100.100.200/32', // Alibaba Cloud
    '168.63.129.16/32', // Azure wire server
    'fd00:ec2::254/128', // AWS over IPv6
    'fd00:ec2::23/128', // AWS EKS Pod Identity over IPv6
    'fd20:ce::254/128', // Google Cloud over IPv6
  ].map((cidr) => ipaddr.parseCIDR(cidr)),
};

/** ipaddr.js's IPv4 range names; names not listed here (unicast, as112, amt) are public. */
const IPV4_CLASSES: Readonly<Record<string, AddressClass>> = {
  unspecified: 'reserved', // 0.0.0.0/8; 0.0.0.0 itself is told apart below
  broadcast: 'broadcast',
  multicast: 'multicast',
  linkLocal: 'link-local',
  loopback: 'loopback',
  carrierGradeNat: 'shared',
  private: 'private',
  reserved: 'reserved', // 192.0.0.0/24, the TEST-NETs, 198.18.0.0/15, 240.0.0.0/4, ...
};

/**
 * ipaddr.js's IPv6 range names; names not listed here (unicast, as112v6, amt) are public. The
 * forms that carry an IPv4 address are judged by it before this table is read.
 */
const IPV6_CLASSES: Readonly<Record<string, AddressClass>> = {
  unspecified: 'unspecified',
  loopback: 'loopback',
  linkLocal: 'link-local',
  multicast: 'multicast',
  uniqueLocal: 'unique-local',
  deprecatedSiteLocal: 'private',
  rfc6052: 'private', // what remains of it here: 64:ff9b:1::/48, local-use NAT64
  discard: 'reserved',
  teredo: 'reserved', // a tunnel to whatever IPv4 address the relay is told
  benchmarking: 'reserved',
  deprecatedOrchid: 'reserved',
  orchid2: 'reserved',
  droneRemoteIdProtocolEntityTags: 'reserved',
  segmentRouting: 'reserved',
  reserved: 'reserved', // 2001::/23, 2001:db8::/32, 3fff::/20
};

/** Deprecated IPv4-compatible addresses (`::a.b.c.d`); `::` and `::1` are matched first. */
const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96');

function isCloudMetadata(address: IpAddress): boolean {
  return ipaddr.subnetMatch(address, CLOUD_METADATA, 'other') === 'metadata';
}

function classifyIpv4(address: ipaddr.IPv4): AddressClass {
  if (isCloudMetadata(address)) return 'cloud metadata';
  const range = address.range();
  if (range === 'unspecified' && address.octets.every((octet) => octet === 0)) return 'unspecified';
  return IPV4_CLASSES[range] ?? 'public';
}

function classifyIpv6(address: ipaddr.IPv6): AddressClass {
  if (isCloudMetadata(address)) return 'cloud metadata';
  const translated = translatedIpv4(address);
  if (translated !== undefined) return classifyIpv4(translated);
  const range = address.range();
  if (range !== 'unspecified' && range !== 'loopback' && address.match(IPV4_COMPATIBLE))
    return 'reserved';
  return IPV6_CLASSES[range] ?? 'public';
}

/** Classifies a literal IP address; throws on anything that is not one. */
export function classifyAddress(address: string): AddressClass {
  const parsed = parseIpAddress(address);
  if (parsed === undefined) throw new TypeError(`not an IP address: ${address}`);
  return parsed instanceof ipaddr.IPv4 ? classifyIpv4(parsed) : classifyIpv6(parsed);
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
