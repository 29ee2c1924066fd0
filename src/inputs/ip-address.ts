import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

export type IpAddress = ipaddr.IPv4 | ipaddr.IPv6;

/**
 * Parses a literal IPv4 address (dotted quad) or IPv6 address (any textual form, with an
 * optional `%zone` and optional brackets). Anything else, including host names, is undefined.
 * Node decides what is a literal, so ipaddr.js's lenient IPv4 forms (`0x7f.1`, octal) never
 * count as one here: URLs arrive with those already normalized to a dotted quad.
 */
export function parseIpAddress(text: string): IpAddress | undefined {
  const unbracketed = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  const withoutZone = unbracketed.split('%')[0] as string;
  const family = isIP(withoutZone);
  if (family === 0) return undefined;
  try {
    return family === 4 ? ipaddr.IPv4.parse(withoutZone) : ipaddr.IPv6.parse(hexTail(withoutZone));
  } catch {
    return undefined;
  }
}

/**
 * `::127.0.0.1` -> `::7f00:1`. ipaddr.js reads `::a.b.c.d` as IPv4-mapped, but it is the
 * (deprecated) IPv4-compatible address `::7f00:1`, which is what a socket would connect to.
 */
function hexTail(ipv6: string): string {
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(ipv6);
  if (dotted === null) return ipv6;
  const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
  const group = (high: number, low: number) => ((high << 8) | low).toString(16);
  return `${ipv6.slice(0, dotted.index)}${group(a, b)}:${group(c, d)}`;
}

export function familyOf(address: IpAddress): 4 | 6 {
  return address instanceof ipaddr.IPv4 ? 4 : 6;
}

const NAT64_WELL_KNOWN = ipaddr.parseCIDR('64:ff9b::/96');

function ipv4From(high: number, low: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
}

/**
 * The IPv4 address an IPv6 address reaches through a translator or tunnel the network provides:
 * IPv4-mapped (`::ffff:0:0/96`), IPv4-translated (`::ffff:0:0:0/96`), NAT64 (`64:ff9b::/96`)
 * and 6to4 (`2002::/16`). Undefined for any other address.
 */
export function translatedIpv4(address: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const { parts } = address;
  switch (address.range()) {
    case 'ipv4Mapped':
      return address.toIPv4Address();
    case '6to4':
      return ipv4From(parts[1] as number, parts[2] as number);
    case 'rfc6145':
      return ipv4From(parts[6] as number, parts[7] as number);
    default:
      return address.match(NAT64_WELL_KNOWN)
        ? ipv4From(parts[6] as number, parts[7] as number)
        : undefined;
  }
}
